"""What the verification harness runs on the NPU for an operator whose report recommends a replacement: the adapter
from the original call's arguments to the replacement's (argument and layout mapping), and, for a harness run with
the CPU as the device (OPASSESS_VERIFY_DEVICE=cpu, how opassess tests its hand-offs), the replacement's documented
semantics on the CPU through the original library's kernels.

The functions below are real Python (tested here) whose source the harness carries (verify.py splices it in
with inspect.getsource): a generated file stands alone. An adapter takes `npu` (torch_npu on the NPU, CpuRoutes on
the CPU) and the original operator's arguments by their schema names, and returns what the original returns.

The layouts come from the vendors' own adapters: npu_deformable_conv2d takes one offset tensor of every x offset,
then every y offset, then the mask (torchvision interleaves (y, x) per kernel point; mmcv's NPU path for
modulated_deform_conv2d reorders channels 1::2 before 0::2 and concatenates the mask), stride, padding and dilation
as four values (N, C first), and returns (output, offset_out); npu_roi_align takes roi_end_mode 3 for aligned boxes
and 0 for Detectron's unaligned ones (torch_npu.contrib.module.ROIAlign) and sample_num 0 for adaptive sampling
(torchvision: any value <= 0).
"""
from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any


def deform_conv2d_route(npu: Any, input: Any, weight: Any, offset: Any, mask: Any, bias: Any, stride_h: int,
                        stride_w: int, pad_h: int, pad_w: int, dilation_h: int, dilation_w: int, groups: int,
                        offset_groups: int, use_mask: bool) -> Any:
    """torchvision::deform_conv2d through torch_npu.npu_deformable_conv2d (offset and mask concatenated)."""
    import torch

    kernel_h, kernel_w = weight.shape[-2:]
    points = offset_groups * kernel_h * kernel_w
    order = torch.tensor(list(range(1, 2 * points, 2)) + list(range(0, 2 * points, 2)), device=offset.device)
    if not use_mask:  # DCNv1: every sample at full weight
        mask = offset.new_ones((offset.shape[0], points, *offset.shape[2:]))
    offset_all = torch.cat([offset.index_select(1, order), mask], dim=1)
    output, _ = npu.npu_deformable_conv2d(input, weight, offset_all, bias, kernel_size=[kernel_h, kernel_w],
                                          stride=[1, 1, stride_h, stride_w], padding=[pad_h, pad_h, pad_w, pad_w],
                                          dilation=[1, 1, dilation_h, dilation_w], groups=groups,
                                          deformable_groups=offset_groups, modulated=True)
    return output


def roi_align_route(npu: Any, input: Any, rois: Any, spatial_scale: float, pooled_height: int, pooled_width: int,
                    sampling_ratio: int, aligned: bool) -> Any:
    """torchvision::roi_align through torch_npu.npu_roi_align (the model's scale, pooled size, ratio, alignment)."""
    return npu.npu_roi_align(input, rois, spatial_scale, pooled_height, pooled_width, max(sampling_ratio, 0),
                             3 if aligned else 0)


class CpuRoutes:
    """The replacements' documented semantics on the CPU (the harness with OPASSESS_VERIFY_DEVICE=cpu), through the
    original library's kernels: the inverse of each adapter's mapping, so a CPU run checks the adapter."""

    @staticmethod
    def npu_deformable_conv2d(input, weight, offset, bias, kernel_size, stride, padding, dilation, groups=1,
                              deformable_groups=1, modulated=True):
        import torch

        points = deformable_groups * kernel_size[0] * kernel_size[1]
        x_offsets, y_offsets, mask = offset[:, :points], offset[:, points:2 * points], offset[:, 2 * points:]
        interleaved = torch.stack([y_offsets, x_offsets], dim=2).flatten(1, 2)
        empty = weight.new_zeros(0)
        output = torch.ops.torchvision.deform_conv2d(
            input, weight, interleaved, mask if modulated else empty, bias if bias is not None else
            weight.new_zeros(weight.shape[0]), stride[2], stride[3], padding[0], padding[2], dilation[2], dilation[3],
            groups, deformable_groups, modulated)
        return output, offset

    @staticmethod
    def npu_roi_align(features, rois, spatial_scale, pooled_height, pooled_width, sample_num, roi_end_mode):
        import torch

        return torch.ops.torchvision.roi_align(features, rois, spatial_scale, pooled_height, pooled_width,
                                               sample_num if sample_num > 0 else -1, roi_end_mode == 3)


def roi_align_inputs(named):
    """Boxes a RoIAlign can take (random ones index images that do not exist): image index below the batch, corners
    inside the image the features were scaled from (1 / spatial_scale), x1 <= x2 and y1 <= y2."""
    import torch

    features, rois = named["input"], named["rois"]
    if rois.dim() != 2 or rois.shape[1] != 5:
        return named
    generator = torch.Generator().manual_seed(len(rois))
    height, width = (size / named["spatial_scale"] for size in features.shape[-2:])
    corners = torch.rand((len(rois), 4), generator=generator, dtype=torch.float64)
    x1, y1 = corners[:, 0] * width * 0.6, corners[:, 1] * height * 0.6
    x2, y2 = x1 + corners[:, 2] * width * 0.4, y1 + corners[:, 3] * height * 0.4
    index = torch.randint(0, features.shape[0], (len(rois),), generator=generator).double()
    return {**named, "rois": torch.stack([index, x1, y1, x2, y2], dim=1).to(rois.dtype)}


def no_preparation(named):
    return named


# operator -> (the replacement the report recommends, the adapter calling it, the inputs' preparation)
ROUTES: Mapping[str, tuple[str, Any, Any]] = {
    "torchvision::deform_conv2d": ("torch_npu.npu_deformable_conv2d", deform_conv2d_route, no_preparation),
    "torchvision::roi_align": ("torch_npu.npu_roi_align", roi_align_route, roi_align_inputs),
}
# inputs that must be valid whatever the route (an image index past the batch reads memory that is not there)
PREPARATIONS: Mapping[str, Any] = {"torchvision::roi_align": roi_align_inputs}


def route_of(op: Mapping[str, Any]) -> tuple[str, Any, Any] | None:
    """(replacement, adapter, preparation) when the harness can test what the report recommends for `op`."""
    known = ROUTES.get(op["op"])
    if known is None or op.get("replacement") != known[0]:
        return None
    return known


def route_source(op: Mapping[str, Any]) -> tuple[str | None, str]:
    """(the replacement tested, the Python text the harness carries: ROUTE_CALL, PREPARE and CpuRoutes)."""
    known = route_of(op)
    prepare = known[2] if known else PREPARATIONS.get(op["op"], no_preparation)
    parts = [inspect.getsource(prepare), f"PREPARE = {prepare.__name__}"]
    if known is None:
        return None, "\n\n\n".join([*parts, "ROUTE_CALL = None"]) + "\n"
    parts += [inspect.getsource(known[1]), f"ROUTE_CALL = {known[1].__name__}", inspect.getsource(CpuRoutes)]
    return known[0], "\n\n\n".join(parts) + "\n"


# The model's import, the operator's lookup and its arguments in schema order, which the reproduction script
# (handoff.py) carries too: every generated file stands alone, so the text is spliced into both templates ({loading})
# rather than imported.
MODEL_LOADING = '''def model_path():
    """The model file: OPASSESS_MODEL when set, else where it lies relative to this file, else as scanned."""
    if os.environ.get("OPASSESS_MODEL"):
        return Path(os.environ["OPASSESS_MODEL"])
    if MODEL_FROM_HERE is not None and (Path(__file__).resolve().parent / MODEL_FROM_HERE).is_file():
        return Path(__file__).resolve().parent / MODEL_FROM_HERE
    return Path(MODEL_SOURCE.split(":")[0])


def load_model_module():
    """Import the model file (or module) once, so that project-defined operators are registered."""
    path = model_path()
    if path.suffix == ".py" and path.exists():
        loaded = sys.modules.get(path.stem)
        if loaded is not None and Path(getattr(loaded, "__file__", None) or "").resolve() == path.resolve():
            return loaded  # imported already (the harness builds every case from it)
        sys.path.insert(0, str(path.parent.resolve()))
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(MODEL_SOURCE.split(":")[0])


def resolve(model):
    """The callable behind the operator key: torch.ops for 'ns::name', else a dotted path or a model attribute."""
    if "::" in OPERATOR:
        namespace, name = OPERATOR.split("::", 1)
        return getattr(getattr(torch.ops, namespace), name)
    head, _, rest = OPERATOR.partition(".")
    if head == "Tensor":
        return lambda first, *args, **kwargs: getattr(first, rest)(*args, **kwargs)
    if head == model.__name__.rpartition(".")[2] and hasattr(model, rest.split(".")[0]):
        target = model
        for part in rest.split("."):
            target = getattr(target, part)
        return getattr(target, "apply", target)
    module_name, _, attribute = OPERATOR.rpartition(".")
    return getattr(importlib.import_module(module_name), attribute)


PLACEHOLDERS = {"float": 1.0, "int": 1, "bool": False, "SymInt": 1}


def schema_named(call, inputs, attrs):
    """For a torch.ops operator: ({argument name: value} in schema order, the names given placeholders), tensors from
    the captured inputs, the rest from the captured attributes; a scalar the capture did not record gets its default
    or a placeholder (said on stderr); None for any other callable."""
    schema = getattr(getattr(call, "default", call), "_schema", None)
    if schema is None:
        return None, []
    tensors, named, placeholders = iter(inputs), {}, []
    for argument in schema.arguments:
        kind = str(argument.type)
        if kind.startswith("Tensor"):
            named[argument.name] = next(tensors, None)
        elif argument.name in attrs:
            named[argument.name] = attrs[argument.name]
        elif argument.has_default_value():
            named[argument.name] = argument.default_value
        else:
            named[argument.name] = PLACEHOLDERS.get(kind.rstrip("?"))
            placeholders.append(argument.name)
            print(f"note: argument {argument.name} ({kind}) was not captured; using {named[argument.name]!r}: set "
                  f"the model's value", file=sys.stderr)
    return named, placeholders


def python_arguments(call, inputs, attrs):
    """For a Python callable (an autograd.Function's forward after ctx, a function): (args, kwargs, the names given
    placeholders): each parameter's captured attribute, else the next captured tensor."""
    owner = getattr(call, "__self__", None)
    function = owner.forward if isinstance(owner, type) and issubclass(owner, torch.autograd.Function) else call
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return list(inputs), dict(attrs), []
    if function is not call:
        parameters = parameters[1:]  # ctx
    tensors, args, kwargs, placeholders, missing = iter(inputs), [], {}, [], object()
    for parameter in parameters:
        if parameter.kind is parameter.VAR_POSITIONAL:  # captured as arg0, arg1, ...: attributes in their places
            index = len(args)
            while True:
                value = attrs[f"arg{index}"] if f"arg{index}" in attrs else next(tensors, missing)
                if value is missing:
                    break
                args.append(value)
                index += 1
        elif parameter.kind is parameter.VAR_KEYWORD:
            kwargs.update({k: v for k, v in attrs.items() if k not in {p.name for p in parameters}
                           and not k.startswith("arg")})
        else:
            value = attrs[parameter.name] if parameter.name in attrs else next(tensors, missing)
            if value is missing:
                if parameter.default is not parameter.empty:
                    continue
                value = None
                placeholders.append(parameter.name)
            if parameter.kind is parameter.KEYWORD_ONLY:
                kwargs[parameter.name] = value
            else:
                args.append(value)
    return args, kwargs, placeholders


def schema_arguments(call, inputs, attrs):
    """The arguments of a call: (args, kwargs), in schema order for a torch.ops operator."""
    named, _ = schema_named(call, inputs, attrs)
    if named is not None:
        return list(named.values()), {}
    args, kwargs, _ = python_arguments(call, inputs, attrs)
    return args, kwargs
'''
