"""Reading the kernel tables in ``data/`` (shipped in the wheel as ``vnetlab.data``).

Every table is TOML. Each leaf is ``{ value = ..., source = "file, function, version" }`` so that a value
is never separated from where it comes from. A malformed or missing table raises :class:`TableError`
naming the file and the field.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Literal

from vnetlab.checks import public
from vnetlab.errors import TableError


def _shipped() -> tuple[str, ...]:
    try:
        return tuple(sorted(p.name[:-5] for p in resources.files("vnetlab.data").iterdir()
                            if p.name.endswith(".toml")))
    except (FileNotFoundError, ModuleNotFoundError):
        return ()


# The tables data/ ships ("kernels", "gro", ...): a table name is one of these, never a path joined as given.
TABLES: tuple[str, ...] = _shipped()
TableName = Literal[TABLES] if TABLES else str  # type: ignore[valid-type]


@dataclass(frozen=True)
class Section:
    """One ``[section]`` of a table: field -> value, with field -> source beside it."""

    table: str
    name: str
    values: Mapping[str, Any]
    sources: Mapping[str, str]
    probes: Mapping[str, str] = field(default_factory=dict)  # field -> "none: <why>" for hand-written rules

    def __getitem__(self, field: str) -> Any:
        try:
            return self.values[field]
        except KeyError:
            raise TableError(f"data/{self.table}.toml: [{self.name}] has no field {field!r}") from None

    def __contains__(self, field: object) -> bool:
        return field in self.values

    @public
    def get(self, field: str, default: Any = None) -> Any:
        return self.values.get(field, default)

    @public
    def source(self, field: str) -> str:
        self[field]
        return self.sources[field]

    @public
    def typed(self, field: str, kind: type | tuple[type, ...]) -> Any:
        """The value of ``field``, checked to be of ``kind`` (bool is not accepted as int)."""
        value = self[field]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds:
            ok = False
        else:
            ok = isinstance(value, kinds)
        if not ok:
            names = " or ".join(k.__name__ for k in kinds)
            raise TableError(
                f"data/{self.table}.toml: [{self.name}].{field} must be {names}, got {value!r}"
            )
        return value


@dataclass(frozen=True)
class Table:
    name: str
    sections: Mapping[str, Section]
    meta: Mapping[str, Any]

    def __getitem__(self, section: str) -> Section:
        try:
            return self.sections[section]
        except KeyError:
            raise TableError(f"data/{self.name}.toml has no section [{section}]") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.sections)

    def __contains__(self, section: object) -> bool:
        return section in self.sections


def _leaf(table: str, where: str, field: str, raw: Any) -> tuple[Any, str]:
    # probe = "none: <why>" marks a rule no probe in lab/probes.py can decide from a source tree.
    if not isinstance(raw, dict) or not {"value", "source"} <= set(raw) <= {"value", "source", "probe"}:
        raise TableError(
            f"data/{table}.toml: {where}.{field} must be {{ value = ..., source = \"...\" }}, got {raw!r}"
        )
    if "probe" in raw and not (isinstance(raw["probe"], str) and raw["probe"].startswith("none: ")):
        raise TableError(f"data/{table}.toml: {where}.{field} probe must be \"none: <why no probe decides it>\"")
    source = raw["source"]
    if not isinstance(source, str) or not source.strip():
        raise TableError(f"data/{table}.toml: {where}.{field} has an empty source")
    return raw["value"], source


@public
def parse_table(name: str, text: str) -> Table:
    """Parse the TOML text of table ``name`` (used by :func:`load_table`; tests call it directly)."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TableError(f"data/{name}.toml is not valid TOML: {exc}") from None
    meta = doc.pop("meta", {})
    if not isinstance(meta, dict):
        raise TableError(f"data/{name}.toml: [meta] must be a table")
    sections: dict[str, Section] = {}
    for sec_name, body in doc.items():
        if not isinstance(body, dict):
            raise TableError(f"data/{name}.toml: top-level {sec_name!r} must be a [section]")
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        probes: dict[str, str] = {}
        for key, raw in body.items():
            values[key], sources[key] = _leaf(name, f"[{sec_name}]", key, raw)
            if isinstance(raw, dict) and "probe" in raw:
                probes[key] = raw["probe"]
        sections[sec_name] = Section(name, sec_name, values, sources, probes)
    return Table(name, _expand_bases(name, sections), meta)


def _expand_bases(table: str, sections: dict[str, Section]) -> dict[str, Section]:
    """Sections written as changes against a base, expanded to whole ones.

    A section ["V"] with a field ``_base = "B"`` lists only what moved from kernel B, and so do its suffixed
    sections ["V.x"] against ["B.x"]: a new or changed value with V's source, or ``false`` for an entry V no longer
    has (data/netdev_features.toml; lab/profile.py writes it). Every reader sees whole sections."""
    if not any("_base" in sec.values for sec in sections.values()):
        return sections
    done: dict[str, Section] = {}

    def split(sec_name: str) -> tuple[str, str]:
        head, _, last = sec_name.rpartition(".")
        return (head, f".{last}") if head and not last.isdigit() else (sec_name, "")

    def full(sec_name: str, seen: tuple[str, ...] = ()) -> Section:
        if sec_name in done:
            return done[sec_name]
        if sec_name in seen:
            raise TableError(f"data/{table}.toml: [{sec_name}] is its own base")
        version, suffix = split(sec_name)
        own = sections[sec_name]
        head = sections.get(version)
        base = head.values.get("_base") if head is not None else None
        if base is None:
            done[sec_name] = own
            return own
        if not isinstance(base, str) or f"{base}{suffix}" not in sections:
            raise TableError(f"data/{table}.toml: [{version}]._base must name a kernel with a [{base}{suffix}] "
                             f"section, got {base!r}")
        parent = full(f"{base}{suffix}", seen + (sec_name,))
        values, sources, probes = dict(parent.values), dict(parent.sources), dict(parent.probes)
        for key, value in own.values.items():
            if key == "_base":
                continue
            if value is False and key not in values:
                raise TableError(f"data/{table}.toml: [{sec_name}].{key} = false removes what {base} does not have")
            if value is False:  # an entry the base has and this kernel does not
                del values[key], sources[key]
                probes.pop(key, None)
            else:
                values[key], sources[key] = value, own.sources[key]
                if key in own.probes:
                    probes[key] = own.probes[key]
        done[sec_name] = Section(table, sec_name, values, sources, probes)
        return done[sec_name]

    return {sec_name: full(sec_name) for sec_name in sections}


@public
@cache
def load_table(name: TableName) -> Table:
    """Load ``data/<name>.toml`` through importlib.resources (works from a wheel and from a checkout)."""
    try:
        text = resources.files("vnetlab.data").joinpath(f"{name}.toml").read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        raise TableError(f"data/{name}.toml is missing from the vnetlab installation") from None
    return parse_table(name, text)
