"""What every system kind declares, and the one interface that runs any of them.

A system kind (``reference``, ``logged``, ``http``, ``python``, ``traces``, ...) is one module of
``core/systems/kinds/`` that registers a :class:`SystemKind` in :data:`SYSTEM_KINDS`: its name, its
typed configuration section (a frozen dataclass derived from :class:`SystemSpec`, read by the generic
parser of ``core/sections.py``), its runner, whether it makes calls (``rag-eval estimate``), which
files it reads (the on-change sensor) and a paragraph of documentation. Everything else (configuration
loading, ``build_runs``, the estimate, the sensor, the docs test) iterates the registry.

The runner interface: ``run(spec, golden, ctx, deployment) -> SystemRun``: the golden set (``golden_set``
table), a :class:`~rag_eval_pipeline.core.systems.records.RunContext` (versions, snapshot, chunk ids,
the configuration's folder) and the deployment's :class:`Deployment` settings in; the system's
``rag_runs`` rows (conformed) and what the run counted out. Nothing here imports Dagster.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.registry import Registry
from rag_eval_pipeline.core.section_checks import check_name
from rag_eval_pipeline.core.section_errors import At, shown
from rag_eval_pipeline.core.sections import key, parse_section
from rag_eval_pipeline.core.systems.records import RunContext

if TYPE_CHECKING:
    import polars as pl

    from rag_eval_pipeline.core import tables
else:
    pl = lazy_module("polars")
    tables = lazy_module("rag_eval_pipeline.core.tables")

__all__ = ["SYSTEM_KINDS", "Deployment", "SystemKind", "SystemRun", "SystemSpec", "parse_system", "parse_systems",
           "questions_of", "rows_frame", "row_counts", "run_system", "system_from_mapping"]


@dataclass(frozen=True, kw_only=True)
class SystemSpec:
    """The keys every system has: ``name`` (stored on every row; no ``/``, ``\\``, control
    characters, at most 200 characters), ``kind`` (a registered kind) and ``citation_format`` (how its
    answers cite inline: :class:`~rag_eval_pipeline.core.citations.markers.CitationFormat`). A kind's
    section derives from this class and adds its own keys."""

    name: str = key(internal=True)
    kind: str = key(internal=True)
    citation_format: object = key(None, check=lambda v: _citation_format_problem(v),
                                  doc="how answers cite inline: `auto` (null: every marker syntax), `none`, or "
                                      "{markers, numbers_refer_to, first_number} (see Citations on the systems page)")


def _citation_format_problem(value: object) -> str | None:
    from rag_eval_pipeline.core.citations.markers import CitationFormat

    return CitationFormat.problem(value)


@dataclass(frozen=True)
class Deployment:
    """Settings of the deployment, not of a system: ``max_concurrency`` caps every system's own
    ``concurrency`` (>= 1), ``user_agent`` is sent by ``http`` systems, ``environ`` is where secrets
    named in the configuration are read (None: ``os.environ``)."""

    max_concurrency: int = 32
    user_agent: str = "rag-eval"
    environ: Mapping[str, str] | None = None

    def concurrency(self, wanted: int) -> int:
        """A system's ``concurrency`` capped by this deployment's ``max_concurrency``."""
        return max(1, min(int(wanted), int(self.max_concurrency)))


@dataclass
class SystemRun:
    """One system's ``rag_runs`` rows (conformed) and what the run counted (for the asset metadata:
    empty for kinds that only compute or read, e.g. calls, retries and errors for live ones)."""

    runs: pl.DataFrame
    info: dict[str, Any] = field(default_factory=dict)


Runner = Callable[[Any, pl.DataFrame, RunContext, Deployment], SystemRun]


def _no_paths(spec: Any) -> tuple[str, ...]:
    return ()


def _one_attempt(spec: Any) -> int:
    return 1


@dataclass(frozen=True)
class SystemKind:
    """A registered kind of system under test.

    ``name``: the value of ``kind:``. ``section``: its configuration section (a :class:`SystemSpec`
    subclass). ``doc``: one paragraph for the systems page. ``run``: the runner (module docstring).
    ``makes_calls``: one call per golden question (``rag-eval estimate`` counts them; a dry run skips
    the system). ``attempts(spec)``: calls per question with every retry spent. ``watches(spec)``:
    the paths (as written, relative to the configuration) whose content the on-change sensor
    fingerprints. ``estimate_note``: for a kind that makes no call, what ``estimate`` says it reads
    (None: not listed). ``order``: its place in lists and messages. ``preflight(spec, base_dir,
    environ, reach)``: for a kind that makes calls, what ``rag-eval check`` can verify without making
    one (a callable imports, a secret variable is set; with ``reach``, one HEAD request); returns
    notes, raises ConfigError for a problem (None: nothing to verify).
    """

    name: str
    section: type
    doc: str
    run: Runner
    makes_calls: bool = False
    attempts: Callable[[Any], int] = _one_attempt
    watches: Callable[[Any], tuple[str, ...]] = _no_paths
    estimate_note: str | None = None
    example: Mapping[str, Any] = field(default_factory=dict)
    order: int = 100
    preflight: Callable[[Any, Path | None, Mapping[str, str] | None, bool], list[str]] | None = None


#: Every system kind, one module each in ``core/systems/kinds/`` (imported on first use).
SYSTEM_KINDS: Registry[SystemKind] = Registry("system kind", package="rag_eval_pipeline.core.systems.kinds")


def register(kind: SystemKind) -> SystemKind:
    """Register ``kind`` (its module calls this once at import). Raises RegistryError for a second one."""
    if not dataclasses.is_dataclass(kind.section) or not issubclass(kind.section, SystemSpec):
        raise TypeError(f"system kind {kind.name!r}: its section must be a SystemSpec dataclass")
    return SYSTEM_KINDS.register(kind)


# ------------------------------------------------------------------------------------------------
# configuration


def parse_system(raw: Any, at: At) -> SystemSpec:
    """One entry of ``systems:`` as its kind's typed section.

    Input: the YAML value and where it is (``at.label`` ``systems[i]``). Output: the kind's section
    with every default filled in. Raises SectionError naming the file, the line, the system
    (``systems[i] (name, kind k)``) and the key: an entry that is not a mapping, a missing or bad
    ``name``, an unknown ``kind`` (the known kinds listed), and whatever the kind's section refuses
    (an unknown key anywhere inside it, a value of the wrong type or out of range).
    """
    if not isinstance(raw, Mapping):
        raise at.error(f"must be a mapping, got {shown(raw)}")
    name = raw.get("name")
    if not name:
        raise at.error("is missing", path=at.path + ("name",), label=f"{at.label}.name")
    if not isinstance(name, str):
        raise at.child("name").error(f"must be a non-empty string, got {shown(name)}")
    problem = check_name(name)
    if problem:
        raise at.child("name").error(problem)
    kind = raw.get("kind")
    if not isinstance(kind, str) or kind not in SYSTEM_KINDS:
        raise at.child("kind").error(f"must be one of {SYSTEM_KINDS.names()}, got {shown(kind)}")
    desc = SYSTEM_KINDS.get(kind)
    inner = dataclasses.replace(at, prefix=f"{at.label} ({name}, kind {kind})")
    values = {k: v for k, v in raw.items() if k not in ("name", "kind")}
    return parse_section(desc.section, values, inner, extra_keys=("name", "kind"), preset={"name": name, "kind": kind})


def parse_systems(raw: Any, at: At) -> tuple[SystemSpec, ...]:
    """The ``systems:`` list: at least one entry, names unique. Raises SectionError."""
    if not isinstance(raw, list) or not raw:
        raise at.error("must list at least one system", label="systems")
    out = tuple(parse_system(s, at.child(i, f"systems[{i}]")) for i, s in enumerate(raw))
    names = [s.name for s in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise at.error(f"duplicate system names {dupes}", label="")
    return out


def system_from_mapping(raw: Mapping[str, Any], *, source: str | Path = "<systems>", index: int = 0,
                        base_dir: Path | None = None) -> SystemSpec:
    """A system section from a plain mapping (``{"name": ..., "kind": ..., ...}``) outside a configuration
    file: tests, benchmarks, ``serve-reference``. Raises SectionError as :func:`parse_system`."""
    return parse_system(raw, At(Path(source), path=("systems", index), label=f"systems[{index}]", base_dir=base_dir))


# ------------------------------------------------------------------------------------------------
# running


def questions_of(golden: pl.DataFrame) -> list[dict]:
    """The golden questions as call arguments: ``question_id``, ``question``, ``user_groups`` (list)."""
    return [{"question_id": q, "question": t, "user_groups": list(g or [])}
            for q, t, g in golden.select("question_id", "question", "user_groups").iter_rows()]


def rows_frame(rows: list[dict]) -> pl.DataFrame:
    """Run rows (dicts in the ``rag_runs`` schema) as a conformed ``rag_runs`` frame."""
    if not rows:
        return tables.empty("rag_runs")
    return tables.conform(pl.DataFrame(rows, schema=tables.SCHEMAS["rag_runs"]), "rag_runs")


def row_counts(rows: list[dict]) -> dict[str, Any]:
    """``questions``, ``error_rows`` and the first 50 ``error_question_ids`` (ids only: an error text can
    quote a reply, and asset metadata never carries answer or chunk text)."""
    errors = [r["question_id"] for r in rows if r["decision"] == "error"]
    return {"questions": len(rows), "error_rows": len(errors), "error_question_ids": errors[:50]}


def run_system(spec: SystemSpec, golden: pl.DataFrame, ctx: RunContext,
               deployment: Deployment | None = None) -> SystemRun:
    """Run one configured system over ``golden`` through its kind's runner.

    Output: its :class:`SystemRun` (rows conformed to ``rag_runs``). Raises ConfigError for an
    unknown kind or a system its runner cannot start (an unset secret, a callable that does not
    import), InputError for a source file that cannot be read."""
    desc = SYSTEM_KINDS.get(spec.kind)
    result = desc.run(spec, golden, ctx, deployment or Deployment())
    result.runs = tables.conform(result.runs, "rag_runs")
    return result


def resolve(base_dir: Path | None, p: str | Path) -> Path:
    """``p`` resolved against ``base_dir`` (the configuration's folder) when relative."""
    path = Path(p)
    return path if path.is_absolute() or base_dir is None else (base_dir / path).resolve()


def fingerprint(path: Path, suffixes: tuple[str, ...] = (".jsonl", ".json", ".ndjson", ".parquet")) -> str:
    """sha256 hex of a file's bytes, or of a folder's (name, bytes) pairs for its files with one of
    ``suffixes`` in name order; ``"missing"`` when the path does not exist."""
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in suffixes)
    else:
        return "missing"
    h = hashlib.sha256()
    for p in files:
        h.update(p.name.encode() + b"\0")
        with p.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")
    return h.hexdigest()


def require(value: Any, what: str) -> Any:
    """``value``, or ConfigError ``what is missing`` when it is None (for runners given a partial spec)."""
    if value is None:
        raise ConfigError(f"{what} is missing")
    return value
