"""The one product vocabulary: Ascend products by the names reports print, with the customer aliases `--target`
accepts and each product's column in the two fact tables (CANN aclnn docs, torch_npu API pages).

Data: opassess/data/products.toml (curated, read strictly). `resolve` maps any alias, case-insensitively and with
runs of spaces folded, to a Product; an unknown name is an UnknownProductError listing the known ones.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..datafile import TomlTable
from ..errors import EXIT_USAGE, KnowledgeBaseError
from ..resources import data_path

FILE = "products.toml"
KERNEL_COLUMNS = ("950", "A3", "A2", "310B", "310P", "910")  # cann_aclnn_dtypes.tsv's product columns


class UnknownProductError(KnowledgeBaseError, ValueError):
    """A product name that maps to none of the known products (from --target: a usage error, exit 2)."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True)
class Product:
    """One Ascend product."""

    name: str  # "Atlas A2": what reports print and the JSON `target` holds
    kernel: str  # its column in cann_aclnn_dtypes.tsv ("A2")
    api_page: str | None  # its column in the torch_npu native-API pages ("Atlas A2"); None: no column
    aliases: tuple[str, ...]
    training: bool  # False: an inference-only product
    evidence: str

    def names(self) -> tuple[str, ...]:
        return (self.name, self.kernel, *([self.api_page] if self.api_page else []), *self.aliases)


@dataclass(frozen=True)
class Products:
    """Every product, in file order (the first is the default target)."""

    items: tuple[Product, ...]
    source: str

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.items)

    @property
    def default(self) -> Product:
        return self.items[0]

    def resolve(self, name: str) -> Product:
        """'910B' / 'a2' / 'Atlas A2' -> the Atlas A2 product (case-insensitive, spaces folded)."""
        wanted = _fold(name)
        for product in self.items:
            if wanted in {_fold(n) for n in product.names()}:
                return product
        aliases = "; ".join(f"{p.name} ({', '.join(p.aliases)})" for p in self.items)
        raise UnknownProductError(f"unknown Ascend product {name!r} (known: {aliases})")


def _fold(name: str) -> str:
    return " ".join(str(name).split()).lower()


def load_products(path: Path | None = None) -> Products:
    """Read products.toml strictly (`path` defaults to the shipped file)."""
    path = Path(path) if path is not None else data_path(FILE)
    root = TomlTable.of_file(path, "product list", KnowledgeBaseError)
    items = []
    for table in root.tables("product"):
        kernel = table.choice("kernel", KERNEL_COLUMNS)
        items.append(Product(table.string("name"), kernel, table.string("api_page", None),
                             table.strings("aliases", ()), table.boolean("training", True), table.string("evidence")))
        table.finish()
    root.finish()
    if not items:
        raise KnowledgeBaseError(f"{path}: no [[product]]")
    seen: dict[str, str] = {}
    for product in items:
        for name in product.names():
            other = seen.setdefault(_fold(name), product.name)
            if other != product.name:
                raise KnowledgeBaseError(f"{path}: name {name!r} given to both {other} and {product.name}")
    return Products(tuple(items), str(path))


@cache
def shipped() -> Products:
    """The shipped product list, read once."""
    return load_products()
