"""The worker's sandbox (Linux): the file system read-only but a private temporary folder, and no network.

Applied by the worker before the model is imported, with what the kernel offers without root:
- **Landlock** (Linux 5.13+): every way of writing a file (write, truncate, create, remove, rename, link) refused
  outside the private folder (and /dev, whose devices an accelerator is opened through); where no network namespace
  can be entered, from Landlock ABI 4, TCP connect and bind refused; from ABI 6, abstract Unix sockets outside the
  worker refused;
- a **network namespace** (unprivileged through a user namespace; directly as root): the worker sees no interface but
  its own loopback, so nothing outside the worker is reachable, while a model's local process group (gloo on
  127.0.0.1) still works;
- without Landlock, a **mount namespace** (in a user namespace for an unprivileged user) whose mounts are all made
  read-only, the private folder a fresh tmpfs.
`--sandbox auto` (the default) applies what is available and says which; `require` fails with one line where
neither Landlock nor namespaces can be used; `off` applies nothing. The private folder is the worker's HOME, TMPDIR
and cache (XDG_CACHE_HOME, torch's and Triton's caches), so a model that writes caches or compiled kernels works;
the parent removes it once the worker has ended. What this does not do: hide the user's files from reading, stop a
model from faking its own capture, or stop what a model does to processes of its user through /proc and signals.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import OpassessError

MODES = ("auto", "require", "off")
_LANDLOCK_CREATE, _LANDLOCK_ADD_RULE, _LANDLOCK_RESTRICT = 444, 445, 446  # syscall numbers: the same on every arch
_MOUNT_SETATTR = 442
_CLONE_NEWNS, _CLONE_NEWUSER, _CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
# Landlock's file-system rights that write: write, remove dir/file, make char/dir/reg/sock/fifo/block/sym (ABI 1),
# refer (2: rename and link across folders), truncate (3)
_WRITES = {1: 0b1_1111_1111_0010, 2: 0b11_1111_1111_0010, 3: 0b111_1111_1111_0010}
_WRITE_FILE, _TRUNCATE = 1 << 1, 1 << 14


class SandboxUnavailable(OpassessError):
    """`--sandbox require` where the kernel offers neither Landlock nor namespaces."""


@dataclass(frozen=True)
class Plan:
    """What the worker is to apply: the mode, Landlock's ABI version (0: none) and the folder its private folder
    goes in. The namespaces are tried by the worker itself (a probe here would fork this process: 60 ms)."""

    mode: str = "off"
    landlock: int = 0
    folder: str = ""


_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def landlock_abi() -> int:
    """The Landlock ABI version this kernel offers (0: none, or not Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    version = _LIBC.syscall(_LANDLOCK_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(0, version)


def available() -> str:
    """What `--sandbox auto` would use here, for --help: 'Landlock ABI 7 (and a network namespace where allowed)'."""
    if not sys.platform.startswith("linux"):
        return "no sandbox (Linux only)"
    abi = landlock_abi()
    if abi:
        return f"Landlock ABI {abi} (and a network namespace where the kernel allows it)"
    return "no Landlock: user, mount and network namespaces where the kernel allows them"


def _namespace_flags(extra: int) -> int:
    return extra if os.geteuid() == 0 else extra | _CLONE_NEWUSER  # root keeps its capabilities on the files


@contextlib.contextmanager
def prepared(mode: str) -> Iterator[Plan]:
    """The Plan for `mode`, its workers' private folders made under a temporary folder of this process, which is
    removed (with whatever the workers wrote) when the block ends."""
    _sweep()
    root = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-")
    try:
        yield plan(mode, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


_PREFIX = "opassess-sandbox-"


def _sweep() -> None:
    """Remove the sandbox folders of runs that were killed before they could (kill -9 of `opassess`): each is named
    after its process, and one whose process is gone is nobody's."""
    if not Path("/proc/self").exists():  # no way to tell a live process from a gone one
        return
    base = tempfile.gettempdir()
    with contextlib.suppress(OSError), os.scandir(base) as entries:
        for entry in entries:
            pid = entry.name[len(_PREFIX):].split("-", 1)[0]
            if entry.name.startswith(_PREFIX) and pid.isdigit() and not Path(f"/proc/{pid}").exists():
                shutil.rmtree(entry.path, ignore_errors=True)


def plan(mode: str, root: str) -> Plan:
    """What `mode` applies on this machine; each worker makes its private folder under `root`."""
    if mode == "off" or not sys.platform.startswith("linux"):
        if mode == "require":
            raise SandboxUnavailable("--sandbox require: no sandbox on this platform (Linux only)")
        return Plan()
    return Plan(mode=mode, landlock=min(landlock_abi(), 7), folder=root)


# The last write or network attempt the worker saw (an audit hook: sys.addaudithook), for its error line to name what
# the sandbox refused: "open('/home/u/.bashrc', 'a')", "socket.connect(('10.0.0.1', 443))"
_ATTEMPTS: list[str] = []
_WATCHED = ("socket.connect", "socket.bind", "socket.sendto", "os.mkdir", "os.remove", "os.rename", "os.symlink",
            "os.truncate", "os.link")


def _audit(event: str, args: tuple) -> None:
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None, 0))[:3]
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
        if writing and isinstance(path, (str, bytes)):
            _ATTEMPTS[:] = [f"open({path!r}, {mode!r})" if mode else f"os.open({path!r})"]
    elif event in _WATCHED:
        shown = ", ".join(repr(a) for a in args[1:] if not hasattr(a, "fileno")) if event.startswith("socket") \
            else ", ".join(repr(a) for a in args[:2])
        _ATTEMPTS[:] = [f"{event}({shown[:200]})"]


def refused(exc: BaseException | None) -> str:
    """' (the sandbox refused socket.connect(('127.0.0.1', 9)))' when `exc` or its causes is a refusal (EACCES,
    EPERM, ENETUNREACH, EROFS) and the worker saw an attempt to write or connect; '' otherwise."""
    import errno

    # ECONNREFUSED: inside the network namespace no port of the host's is there to answer
    codes = (errno.EACCES, errno.EPERM, errno.ENETUNREACH, errno.EROFS, errno.EADDRNOTAVAIL, errno.ECONNREFUSED)
    for _ in range(10):
        if exc is None:
            return ""
        if isinstance(exc, OSError) and exc.errno in codes:
            return f" (the sandbox refused {_ATTEMPTS[0]})" if _ATTEMPTS else " (refused by the sandbox)"
        exc = exc.__cause__ or exc.__context__
    return ""


def apply(sandbox: Plan) -> str:
    """In the worker, before model code: point HOME, TMPDIR and the caches at a private folder, enter a network
    namespace (and, without Landlock, a read-only mount namespace), then restrict writes with Landlock; what applied,
    in words ('landlock-abi7+network-namespace', 'off'). An OSError says what `require` could not apply."""
    if sandbox.mode == "off":
        return "off"
    folder = tempfile.mkdtemp(prefix="worker-", dir=sandbox.folder)
    for name in ("HOME", "TMPDIR", "XDG_CACHE_HOME", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR",
                 "TORCH_EXTENSIONS_DIR", "HF_HOME"):
        os.environ[name] = folder
    tempfile.tempdir = folder
    applied = []
    mounts = not sandbox.landlock
    try:
        _enter_namespaces(folder, mounts)
    except OSError:
        if mounts and sandbox.mode == "require":
            raise
        mounts = False
        try:
            _enter_namespaces(folder, False)
        except OSError:
            pass  # no network namespace: Landlock (ABI 4+) still refuses TCP
        else:
            applied.append("network-namespace")
    else:
        applied += ["mount-namespace", "network-namespace"] if mounts else ["network-namespace"]
    isolated = "network-namespace" in applied
    if isolated:
        _loopback()
    if sandbox.landlock:
        _landlock(sandbox.landlock, folder, tcp=not isolated)
        applied.insert(0, f"landlock-abi{sandbox.landlock}")
    sys.addaudithook(_audit)
    return "+".join(applied) or "off"


def _loopback() -> None:
    """Bring up the network namespace's own loopback, its only interface: a model's local process group (gloo's
    store and pairs on 127.0.0.1, GLOO_SOCKET_IFNAME=lo) works inside the worker, and nothing outside it is reachable
    (the host's loopback is another namespace's). Where it cannot be brought up, loopback stays down."""
    import fcntl
    import socket
    import struct

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            request = struct.pack("16sh14x", b"lo", 0)
            flags = struct.unpack("16sh14x", fcntl.ioctl(probe, siocgifflags, request))[1]
            fcntl.ioctl(probe, siocsifflags, struct.pack("16sh14x", b"lo", flags | iff_up))
    except OSError:
        return
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")


def _check(result: int, what: str) -> None:
    if result < 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def _enter_namespaces(folder: str, mounts: bool) -> None:
    uid, gid = os.geteuid(), os.getegid()
    flags = _namespace_flags(_CLONE_NEWNET | (_CLONE_NEWNS if mounts else 0))
    _check(_LIBC.unshare(ctypes.c_int(flags)), "unshare")
    if flags & _CLONE_NEWUSER:  # the same ids inside, so the user's files stay the user's
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as out:
                out.write(text)
    if mounts:
        ms_rec, ms_private = 0x4000, 0x40000
        _check(_LIBC.mount(None, b"/", None, ctypes.c_ulong(ms_rec | ms_private), None), "mount --make-rprivate /")
        _check(_LIBC.mount(b"tmpfs", folder.encode(), b"tmpfs", ctypes.c_ulong(0), None), "mount tmpfs")

        class MountAttr(ctypes.Structure):
            _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                        ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]

        at_fdcwd, at_recursive, rdonly = -100, 0x8000, 0x1
        for path in ("/",):  # every mount read-only, then the private folder writable again
            attr = MountAttr(rdonly, 0, 0, 0)
            _check(_LIBC.syscall(_MOUNT_SETATTR, at_fdcwd, path.encode(), at_recursive, ctypes.byref(attr),
                                 ctypes.c_size_t(ctypes.sizeof(attr))), f"read-only {path}")
        attr = MountAttr(0, rdonly, 0, 0)
        _check(_LIBC.syscall(_MOUNT_SETATTR, at_fdcwd, folder.encode(), 0, ctypes.byref(attr),
                             ctypes.c_size_t(ctypes.sizeof(attr))), "writable private folder")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _landlock(abi: int, folder: str, tcp: bool = True) -> None:
    """Writes only below `folder` (and /dev); with `tcp` (no network namespace to contain it), TCP bind and connect
    refused from ABI 4; abstract Unix sockets scoped from ABI 6."""
    writes = _WRITES[min(abi, 3)]
    attr = _RulesetAttr(writes, 0b11 if abi >= 4 and tcp else 0, 0b01 if abi >= 6 else 0)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = _LIBC.syscall(_LANDLOCK_CREATE, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    _check(ruleset, "landlock_create_ruleset")
    try:
        allowed = [(folder, writes), ("/dev", _WRITE_FILE | (_TRUNCATE if abi >= 3 else 0))]
        if Path("/dev/shm").is_dir():
            allowed.append(("/dev/shm", writes))  # shared memory of torch's own multiprocessing
        for path, rights in allowed:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneath(rights, fd)
                _check(_LIBC.syscall(_LANDLOCK_ADD_RULE, ruleset, 1, ctypes.byref(rule), 0), f"landlock rule {path}")
            finally:
                os.close(fd)
        pr_set_no_new_privs = 38
        _check(_LIBC.prctl(pr_set_no_new_privs, 1, 0, 0, 0), "no_new_privs")
        _check(_LIBC.syscall(_LANDLOCK_RESTRICT, ruleset, 0), "landlock_restrict_self")
    finally:
        os.close(ruleset)
