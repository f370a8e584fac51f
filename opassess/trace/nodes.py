"""The scratch record a capture builds per operator call, frozen into an OpNode, and the error naming a failed node."""
from __future__ import annotations

from dataclasses import dataclass

from ..load import describe_error
from ..records import OpNode


@dataclass
class NodeBuild:
    """Mutable scratch while a capture runs; frozen into OpNode at the end."""

    name: str
    key: str
    kind: str
    module_path: str
    attrs: dict
    inputs: tuple
    outputs: tuple
    aten: tuple
    source: str | None
    flops: int
    bytes_moved: int
    entry: tuple = ()
    project_source: str | None = None  # the project frame behind a library source line

    def freeze(self) -> OpNode:
        return OpNode(name=self.name, key=self.key, kind=self.kind, module_path=self.module_path, attrs=self.attrs,
                      input_shapes=self.inputs[0], input_dtypes=self.inputs[1], output_shapes=self.outputs[0],
                      output_dtypes=self.outputs[1], aten=self.aten, source=self.source, flops=self.flops,
                      bytes_moved=self.bytes_moved, entry=self.entry, project_source=self.project_source)


class NodeFailure(Exception):
    """A graph node raised while running; carries the node's name and source line."""

    def __init__(self, node: str, source: str | None, cause: BaseException) -> None:
        super().__init__(f"node {node}" + (f" ({source})" if source else "") + f": {describe_error(cause)}")
        self.cause = cause
