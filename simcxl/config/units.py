"""Sizes as people write them (64k, 1.5m, 1g), for every layer that takes one."""

from __future__ import annotations

from typing import Union

from .params import ParamError


def parse_size(text: Union[str, int], name: str = "size") -> int:
    """'64k', '1.5m', '1g' or a byte count -> bytes."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text <= 0:
            raise ParamError(f"{name} {text!r} is not allowed; allowed: a positive whole number of bytes")
        return text
    t = str(text).strip().lower().rstrip("b").rstrip("i")
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}.get(t[-1:], 1)
    num = t[:-1] if t[-1:] in "kmgt" else t
    try:
        v = float(num) * mult
    except ValueError:
        raise ParamError(f"{name} {text!r} is not a size; allowed: a byte count or a number with k, m or g") from None
    if v <= 0 or not v.is_integer():
        raise ParamError(f"{name} {text!r} is not allowed; allowed: a positive whole number of bytes")
    return int(v)
