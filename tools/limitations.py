"""Turn one torch_npu limitation cell (Chinese prose) into structured facts; build-time only, never shipped.

The parser works clause by clause. A clause it can state as a rule becomes a dict such as
{"kind": "dtype", "params": ["input"], "allowed": ["bfloat16", "float16", "float32"]} or
{"kind": "param", "param": "proj_size", "rule": "unsupported"}; an informational clause becomes
{"kind": "note", "tag": "precision"}; anything else is counted as unparsed and kept only as a
category tag plus its clause index (the text itself never leaves the build).
"""
from __future__ import annotations

import re

# Short dtype names used in the docs -> torch dtype names.
DTYPE_NAMES = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "fp32": "float32",
    "fp64": "float64",
    "double": "float64",
    "uint8": "uint8",
    "uint16": "uint16",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "bool": "bool",
    "complex64": "complex64",
    "complex128": "complex128",
}

# Product names as they appear inside <term> tags -> our product keys.
PRODUCT_TERMS = {
    "Atlas A2 训练系列产品": "Atlas A2",
    "Atlas A3 训练系列产品": "Atlas A3",
    "Ascend 950DT": "Ascend 950DT",
    "Atlas 训练系列产品": "Atlas training",
    "Atlas 推理系列产品": "Atlas inference",
}

_DT = r"(?:bf16|fp16|fp32|fp64|uint8|uint16|int8|int16|int32|int64|bool|complex64|complex128|double)"
_DT_LIST = rf"{_DT}(?:\s*(?:，|、|,|和)\s*{_DT})*"
_PARAMS = r"`(\w+)`(?:(?:、|/)`(\w+)`)*"
_TERMS = r"((?:<term>[^<]+</term>(?:、|/)?)+)"
_CODE = re.compile(r"```.*?```", re.S)


def _dtypes(text: str) -> list[str]:
    out: list[str] = []
    for token in re.findall(_DT, text):
        name = DTYPE_NAMES[token]
        if name not in out:
            out.append(name)
    return out


def _products(terms: str) -> list[str]:
    return [PRODUCT_TERMS.get(t, t) for t in re.findall(r"<term>([^<]+)</term>", terms)]


def _param_names(text: str) -> list[str]:
    return re.findall(r"`(\w+)`", text)


def _literal(token: str):
    low = token.strip().strip("`\"'").lower()
    if low == "true":
        return True
    if low == "false":
        return False
    if re.fullmatch(r"-?\d+", low):
        return int(low)
    return token.strip().strip("`\"'")


def split_clauses(text: str) -> list[str]:
    """Split a limitation cell into clauses: bullets (' - '), sentences ('。', '；')."""
    text = _CODE.sub(" CODEBLOCK ", text.replace("<br>", " - "))
    text = text.strip()
    if text.startswith("- "):
        text = text[2:]
    parts: list[str] = []
    for bullet in re.split(r"\s+-\s+", text):
        for sentence in re.split(r"。|；", bullet):
            sentence = sentence.strip(" ，,：:")
            if sentence:
                parts.append(sentence)
    return parts


def _dtype_rule(m: re.Match, products: list[str] | None, when: dict | None = None) -> dict:
    params = _param_names(m.group("params"))
    rule: dict = {"kind": "dtype", "params": params, "allowed": _dtypes(m.group("dts"))}
    if products:
        rule["products"] = products
    if when:
        rule["when"] = when
    return rule


_RE_DTYPE = re.compile(
    rf"^(?:{_TERMS}：)?(?P<params>{_PARAMS})(?:参数)?(?:仅支持|只支持|支持)(?:输出)?(?P<dts>{_DT_LIST})(?P<rest>.*)$"
)
_RE_COND_DTYPE = re.compile(
    rf"^属性`(?P<cp>\w+)`(?P<neg>非|为)(?P<cv>\w+)时，(?P<params>{_PARAMS})仅支持(?P<dts>{_DT_LIST})$"
)
_RE_PRODUCT_NO_DTYPE = re.compile(rf"^{_TERMS}：不支持(?P<dts>{_DT_LIST})$")
_RE_PRODUCT_EXTRA = re.compile(rf"^{_TERMS}额外支持(?P<dts>{_DT_LIST})$")
_RE_NO_DOUBLE = re.compile(r"^不支持double数据类型$")
_RE_DTYPE_NOT = re.compile(rf"^不支持(?P<dts>{_DT_LIST})数据类型$")
_RE_QKV_DTYPE = re.compile(rf"^输入(?P<params>{_PARAMS})的数据类型为(?P<dts>{_DT_LIST})$")
_RE_FALLBACK_MAY = re.compile(r"^(?:在某些情况下)?可能回退至CPU执行$")
_RE_FALLBACK = re.compile(r"^回退至CPU执行$")
_RE_CPU_ONLY = re.compile(r"^仅CPU支持$")
_RE_PARAM_UNSUPPORTED = re.compile(r"^不支持`(\w+)`(?:参数)?$")
_RE_PARAM_EQUALS_NUM = re.compile(r"(?:^|，)`(\w+)`(?:的值目前在NPU上)?仅支持(?:设置为)?(\d+)(?:或\([\d,\s]+\))?$")
_RE_NOT_SCENE = re.compile(r"^不支持`(\w+)=(True|False)`(?:的)?场景$")
_RE_ONLY_RETURN = re.compile(r"仅支持返回`(\w+)`为(true|false|True|False)的计算结果$")
_RE_PARAM_ONLY_SET = re.compile(r"^`(\w+)`参数仅支持设置为`(\w+)`$")
_RE_PARAM_ONLY_BOOL = re.compile(r"^(?:当前)?`(\w+)`(?:参数)?仅支持(True|False)$")
_RE_MODES = re.compile(r"^支持((?:[a-z]+)(?:、[a-z]+)+)$")
_RE_ONLY_MODE = re.compile(r"^只支持`(\w+)`\s*=\s*(\w+)")
_RE_MEMFMT = re.compile(r"`(memory_format)`(?:参数)?(?:仅支持(?:传入)?|为)((?:torch\.\w+)(?:(?:和|或)torch\.\w+)*)")
_RE_MEMFMT2 = re.compile(r"仅支持设置`(memory_format)`为((?:torch\.\w+)(?:(?:和|或)torch\.\w+)*)")
_RE_NDIM_RANGE = re.compile(r"^(?:`(\w+)`)?(?:只支持|仅支持|支持)(\d)-(\d)维")
_RE_NDIM_MAX = re.compile(r"^输入最大支持(\d)维$")
_RE_NDIM_NOT_GE = re.compile(r"^不支持(\d)维度及以上输入$")
_RE_NDIM_NOT = re.compile(r"^(?:入参)?`?(\w+)?`?不支持(\d)维(?:度的shape)?$")
_RE_NDIM_MIN = re.compile(r"^该API仅支持(\d)维及以上的输入`(\w+)`$")
_RE_NDIM_LE = re.compile(r"^输入`tensor`的维度不大于(\d)维$")
_RE_NO_SCALAR = re.compile(r"^(?:`(\w+)`)?不支持标量`tensor`$")
_RE_GT = re.compile(r"^`(\w+)`参数需大于(\d+)$")
_RE_NONNEG = re.compile(r"^属性`(\w+)`仅支持非负值")
_RE_GE = re.compile(r"^仅支持`(\w+)`大于等于(\d+)$")
_RE_LE = re.compile(r"^`(\w+)`需小于等于(\d+)$")
_RE_NOT_IN = re.compile(r"^`(\w+)`不支持((?:\d+)(?:，\d+)*)$")
_RE_INFERENCE = re.compile(r"^当前仅支持推理场景")
_RE_NO_TRAIN = re.compile(r"^不支持训练场景$")
_RE_NO_SPARSE = re.compile(r"^不支持稀疏张量$")
_RE_NO_PACKED = re.compile(r"^不支持变长序列输入$")
_RE_USE_INSTEAD = re.compile(r"(?:建议使用已适配的|NPU对应接口为|NPU形式名称为)`([\w.]+)`")
_RE_DOUBLE_CAST = re.compile(r"暂不支持double类型.*默认返回fp32")
_RE_INDEX_INT32 = re.compile(r"^`(\w+)`为True时，返回的`(\w+)`的数据类型为int32$")
_RE_AUTO_FIX = re.compile(rf"^针对{_TERMS}，由于底层实现限制，`\"?(\w+)\"?`仅支持(True|False)")
_RE_PRODUCT_SCOPE = re.compile(rf"^(?:针对)?{_TERMS}[，：、]")

# Informational clauses: (pattern, tag). They carry no limit a model can trip.
_NOTE_TAGS = (
    (re.compile(r"精度|误差|正0和负0|不一致|存在差异"), "precision"),
    (re.compile(r"^取值范围|数值范围"), "value-range"),
    (re.compile(r"性能下降"), "performance"),
    (re.compile(r"use_compatible_impl"), "compat-switch"),
    (re.compile(r"allow_internal_format"), "internal-format"),
    (re.compile(r"支持Named Tensor"), "named-tensor"),
    (re.compile(r"隐式地初始化"), "implicit-device-init"),
    (re.compile(r"jit_compile"), "jit-compile"),
    (re.compile(r"foreach"), "foreach"),
    (re.compile(r"高危操作"), "high-risk"),
    (re.compile(r"HCCL|hccl"), "hccl"),
    (re.compile(r"确定性"), "determinism"),
    (re.compile(r"profiling|use_device"), "profiler"),
    (re.compile(r"torch\.compile"), "compile"),
    (re.compile(r"^CODEBLOCK$|例如"), "example"),
)

_UNPARSED_TAGS = (
    (re.compile(r"维|shape|形状|排布"), "shape"),
    (re.compile(r"取值|范围|大于|小于|不能|必须|需"), "value"),
    (re.compile(r"设置|配置|环境变量"), "config"),
    (re.compile(_DT), "dtype"),
)


def parse_clause(clause: str) -> dict | None:
    """One clause -> a structured rule or note, or None when it cannot be stated as structure."""
    m = _RE_COND_DTYPE.match(clause)
    if m:
        when = {"param": m.group("cp"), "equals" if m.group("neg") == "为" else "not_equals": m.group("cv")}
        return _dtype_rule(m, None, when)
    m = _RE_DTYPE.match(clause)
    if m:
        products = _products(m.group(1)) if m.group(1) else None
        rule = _dtype_rule(m, products)
        rest = m.group("rest").strip(" ，,")
        if rest:
            tail = parse_clause(rest)
            if tail is None:
                if not rest.startswith("取值范围"):
                    return None
                tail = {"kind": "note", "tag": "value-range"}
            rule = {"kind": "group", "rules": [rule, tail]}
        return rule
    m = _RE_QKV_DTYPE.match(clause)
    if m:
        return _dtype_rule(m, None)
    m = _RE_PRODUCT_NO_DTYPE.match(clause)
    if m:
        return {"kind": "dtype_excluded", "dtypes": _dtypes(m.group("dts")), "products": _products(m.group(1))}
    m = _RE_PRODUCT_EXTRA.match(clause)
    if m:
        return {"kind": "dtype_extra", "dtypes": _dtypes(m.group("dts")), "products": _products(m.group(1))}
    if _RE_NO_DOUBLE.match(clause):
        return {"kind": "dtype_excluded", "dtypes": ["float64"]}
    m = _RE_DTYPE_NOT.match(clause)
    if m:
        return {"kind": "dtype_excluded", "dtypes": _dtypes(m.group("dts"))}
    if _RE_FALLBACK_MAY.match(clause):
        return {"kind": "cpu_fallback", "when": "may"}
    if _RE_FALLBACK.match(clause):
        return {"kind": "cpu_fallback", "when": "always"}
    if _RE_CPU_ONLY.match(clause):
        return {"kind": "cpu_only"}
    m = _RE_PARAM_UNSUPPORTED.match(clause)
    if m:
        return {"kind": "param", "param": m.group(1), "rule": "unsupported"}
    m = _RE_PARAM_EQUALS_NUM.search(clause)
    if m:
        return {"kind": "param", "param": m.group(1), "rule": "equals", "value": int(m.group(2))}
    m = _RE_NOT_SCENE.match(clause)
    if m:
        # "sorted=False is not supported" -> sorted must be True.
        return {"kind": "param", "param": m.group(1), "rule": "equals", "value": m.group(2) != "True"}
    m = _RE_ONLY_RETURN.search(clause)
    if m:
        return {"kind": "param", "param": m.group(1), "rule": "equals", "value": _literal(m.group(2))}
    m = _RE_PARAM_ONLY_SET.match(clause)
    if m:
        # "may only be set to X": the default is always allowed; a value that is set must be in the list.
        return {"kind": "param", "param": m.group(1), "rule": "in", "value": [m.group(2)]}
    m = _RE_PARAM_ONLY_BOOL.match(clause)
    if m:
        return {"kind": "param", "param": m.group(1), "rule": "equals", "value": _literal(m.group(2))}
    m = _RE_MODES.match(clause)
    if m:
        return {"kind": "param", "param": "mode", "rule": "in", "value": m.group(1).split("、")}
    m = _RE_ONLY_MODE.match(clause)
    if m:
        return {"kind": "param", "param": m.group(1), "rule": "in", "value": [m.group(2)]}
    m = _RE_MEMFMT.search(clause) or _RE_MEMFMT2.search(clause)
    if m:
        values = re.split(r"和|或", m.group(2))
        return {"kind": "param", "param": m.group(1), "rule": "in", "value": values}
    m = _RE_AUTO_FIX.match(clause)
    if m:
        return {"kind": "param", "param": m.group(2), "rule": "equals", "value": _literal(m.group(3)),
                "products": _products(m.group(1)), "auto_fixed": True}
    m = _RE_NDIM_RANGE.match(clause)
    if m:
        return {"kind": "ndim", "param": m.group(1) or "input", "min": int(m.group(2)), "max": int(m.group(3))}
    m = _RE_NDIM_MAX.match(clause) or _RE_NDIM_LE.match(clause)
    if m:
        return {"kind": "ndim", "param": "input", "max": int(m.group(1))}
    m = _RE_NDIM_NOT_GE.match(clause)
    if m:
        return {"kind": "ndim", "param": "input", "max": int(m.group(1)) - 1}
    m = _RE_NDIM_MIN.match(clause)
    if m:
        return {"kind": "ndim", "param": m.group(2), "min": int(m.group(1))}
    m = _RE_NDIM_NOT.match(clause)
    if m:
        return {"kind": "ndim", "param": m.group(1) or "input", "not": [int(m.group(2))]}
    m = _RE_NO_SCALAR.match(clause)
    if m:
        return {"kind": "ndim", "param": m.group(1) or "input", "min": 1}
    m = _RE_GT.match(clause)
    if m:
        return {"kind": "param", "param": m.group(1), "rule": "gt", "value": int(m.group(2))}
    m = _RE_NONNEG.match(clause)
    if m:
        return {"kind": "param", "param": m.group(1), "rule": "ge", "value": 0}
    m = _RE_GE.match(clause)
    if m:
        return {"kind": "param", "param": m.group(1), "rule": "ge", "value": int(m.group(2))}
    m = _RE_LE.match(clause)
    if m:
        return {"kind": "param", "param": m.group(1), "rule": "le", "value": int(m.group(2))}
    m = _RE_NOT_IN.match(clause)
    if m:
        return {"kind": "param", "param": m.group(1), "rule": "not_in",
                "value": [int(v) for v in m.group(2).split("，")]}
    if _RE_INFERENCE.match(clause) or _RE_NO_TRAIN.match(clause):
        return {"kind": "inference_only"}
    if _RE_NO_SPARSE.match(clause):
        return {"kind": "no_sparse"}
    if _RE_NO_PACKED.match(clause):
        return {"kind": "no_packed_sequence"}
    m = _RE_USE_INSTEAD.search(clause)
    if m:
        return {"kind": "use_instead", "api": m.group(1)}
    if _RE_DOUBLE_CAST.search(clause):
        return {"kind": "dtype_cast", "from": "float64", "to": "float32"}
    m = _RE_INDEX_INT32.match(clause)
    if m:
        return {"kind": "dtype_cast", "from": "int64", "to": "int32", "output": m.group(2), "when_param": m.group(1)}
    for pattern, tag in _NOTE_TAGS:
        if pattern.search(clause):
            return {"kind": "note", "tag": tag}
    return None


def unparsed_tag(clause: str) -> str:
    """A coarse category for a clause the parser could not structure (for coverage reports)."""
    scoped = _RE_PRODUCT_SCOPE.match(clause)
    for pattern, tag in _UNPARSED_TAGS:
        if pattern.search(clause):
            return f"product-{tag}" if scoped else tag
    return "product-other" if scoped else "other"


def parse_limitation(text: str) -> dict:
    """A whole limitation cell -> {"rules": [...], "notes": [...], "unparsed": [{"clause": i, "tag": t}],
    "clauses": n}."""
    rules: list[dict] = []
    notes: list[str] = []
    unparsed: list[dict] = []
    clauses = split_clauses(text)

    def take(item: dict) -> None:
        if item["kind"] == "group":
            for sub in item["rules"]:
                take(sub)
        elif item["kind"] == "note":
            if item["tag"] not in notes:
                notes.append(item["tag"])
        else:
            rules.append(item)

    for index, clause in enumerate(clauses):
        item = parse_clause(clause)
        if item is None:
            unparsed.append({"clause": index, "tag": unparsed_tag(clause)})
        else:
            take(item)
    return {"rules": rules, "notes": notes, "unparsed": unparsed, "clauses": len(clauses)}
