"""Everything about a suite that can be checked without running a system or a judge (``rag-eval check``).

:func:`check_config` reads what a run would read, in the order a run reads it, and collects one
:class:`Problem` per thing that would stop the run (or fail a blocking check of its first assets):

1. the corpus (``build_snapshot``: every source's reader, with file, line and field);
2. the golden set against the snapshot (``build_golden``); if the corpus failed, its file alone;
3. every system whose kind reads files (its ``watches``: a ``logged`` system's log, a ``traces`` or
   ``langsmith`` system's export), read through the system's id mapping (``chunk_map``, passages
   aligned by text) and checked against the snapshot and the golden set as ``rag_runs`` checks them
   (a golden question without a run row is a problem unless ``metrics.complete``; questions outside
   the golden set are counted);
4. every system whose kind makes calls, through its kind's ``preflight`` (no call is made): a
   ``python`` system's callable is imported; an ``http`` system's secrets (``headers_from_env``)
   must be set, and with ``reach=True`` its URL gets one HEAD request (OPTIONS when HEAD is refused)
   that must be answered. A kind that computes in process (``reference``) needs nothing more than
   its configuration;
5. with ``output`` (the suite's output folder), the promoted baseline there (``core.baseline.read_baseline``:
   the manifest, the recorded sha256 of each table, their schema versions), which a run's regression gate
   would otherwise find damaged only after every system and the judge have run; a baseline evaluated on
   another corpus or golden version, golden evidence on withdrawn or replaced documents and a log whose
   errored runs exceed ``gates.max_run_error_share`` are ``warnings`` (the run reports them: they are not
   mistakes in a file, but the run will warn, or block promotion, because of them).

A problem is ``config`` (the configuration points at something that cannot work: an import, an unset
variable, an unreachable URL) or ``data`` (a file's content: the message names file, line and field).
Informational lines (what was read, what the id mapping did, unmatched passages) are ``notes``.
The configuration itself is loaded by the caller (``load_config``): a file that does not load never
gets here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from rag_eval_pipeline.core.config import EvalConfig
from rag_eval_pipeline.core.errors import ConfigError, EvalError, InputError

CONFIG, DATA = "config", "data"
_SHOWN_IDS = 10


@dataclass(frozen=True)
class Problem:
    """One thing that would stop a run: ``kind`` (``config`` or ``data``) and a one-line ``message``."""

    kind: str
    message: str


@dataclass
class CheckReport:
    """What :func:`check_config` found: ``problems`` (in the order found), ``notes`` (what was read, one line
    each) and ``warnings`` (one line each: not a mistake, but the run will warn or block promotion because of it)."""

    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def config_problems(self) -> list[Problem]:
        return [p for p in self.problems if p.kind == CONFIG]

    @property
    def data_problems(self) -> list[Problem]:
        return [p for p in self.problems if p.kind == DATA]

    def add(self, kind: str, message: str) -> None:
        self.problems.append(Problem(kind, " ".join(str(message).split())))  # one line, always

    def add_input(self, exc: InputError, prefix: str = "") -> None:
        """One ``data`` problem per bad record of ``exc`` (an :class:`~core.errors.InputErrors` holds every bad
        line of a file, the first 20 kept: then one more line says how many were left out); ``prefix``: who read
        the file (``"system x (logged): "``)."""
        errors = getattr(exc, "errors", [exc])
        for error in errors:
            self.add(DATA, f"{prefix}{_one_line(error)}")
        left = getattr(exc, "total", len(errors)) - len(errors)
        if left > 0:
            self.add(DATA, f"{prefix}file {exc.path}: and {left} more bad record(s) (the first {len(errors)} shown)")


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def check_config(cfg: EvalConfig, *, reach: bool = False, timeout_s: float = 5.0,
                 environ: dict[str, str] | None = None, every_question: bool = True,
                 output: str | Path | None = None) -> CheckReport:
    """Check a loaded configuration's data and systems without running a system or a judge.

    Input: a loaded :class:`EvalConfig`; ``reach``: send one HEAD (or OPTIONS) request to each
    ``http`` system's URL, at most ``timeout_s`` seconds each; ``environ``: where ``headers_from_env``
    variables are looked up (default ``os.environ``); ``every_question``: a log must answer every golden
    question (False for the quick evaluation's subset); ``output``: the suite's output folder, whose
    promoted baseline is checked (None: not checked). Output: a :class:`CheckReport` (module docstring).
    Raises nothing for bad data, systems or a damaged baseline (they are problems); a bug raises.
    """
    from rag_eval_pipeline.core.pipeline import build_golden, build_snapshot

    report = CheckReport()
    snapshot = golden = None
    version = ""
    try:
        snapshot, version = build_snapshot(cfg)
        report.notes.append(f"corpus: {snapshot['doc_id'].n_unique()} documents, {snapshot.height} chunks "
                            f"({cfg.corpus.source}), corpus_version {version[:12]}")
    except InputError as exc:
        report.add_input(exc)
    except ConfigError as exc:
        report.add(CONFIG, _one_line(exc))
    if snapshot is not None:
        try:
            golden = build_golden(cfg, snapshot)
            levels = _levels(golden)
            report.notes.append(f"golden set: {golden.height} questions, relevance judged per {levels}, "
                                f"golden_version {golden['golden_version'][0][:12]}")
            if cfg.shards > 1:
                from rag_eval_pipeline.core.shards import shard_sizes_line

                report.notes.append(shard_sizes_line(golden["question_id"], cfg.shards))
        except InputError as exc:
            report.add_input(exc)
        except ConfigError as exc:
            report.add(CONFIG, _one_line(exc))
    elif cfg.golden.path is not None:  # no snapshot to check ids against: the file's own format still
        from rag_eval_pipeline.core.sources.golden import load_golden

        try:
            load_golden(cfg.golden.path)
        except InputError as exc:
            report.add_input(exc)
    for index, spec in enumerate(cfg.systems):
        try:
            _check_system(cfg, spec, snapshot, golden, version, report, reach=reach, timeout_s=timeout_s,
                          environ=environ, every_question=every_question)
        except InputError as exc:
            report.add_input(exc, f"system {spec.name} ({spec.kind}): ")
        except ConfigError as exc:
            text = _one_line(exc).removeprefix(f"system {spec.name!r}: ")  # named once, with its kind
            report.add(CONFIG, f"{_system_line(cfg, index, spec, text)}system {spec.name} ({spec.kind}): {text}")
    if golden is not None and snapshot is not None:
        _evidence_notes(golden, snapshot, report)
        _gate_level_warnings(cfg, golden, report)
    _calibration_warning(cfg, report)
    if output is not None:
        check_baseline(Path(output), report, corpus_version=version or None,
                       golden_version=golden["golden_version"][0] if golden is not None and golden.height else None)
    return report


def _gate_level_warnings(cfg: EvalConfig, golden: pl.DataFrame, report: CheckReport) -> None:
    """A warning per retrieval gate and gated system (baseline, candidates) whose value will be null, so the gate is
    ``not_evaluable`` (it fails when blocking): the level the gate reads (``core.gates.gated_level``: the
    threshold's ``level``, else chunk when the golden set judges chunks, else doc) is not one the system is scored
    at (:func:`core.pipeline.scored_levels`: a ``chunk_map: {doc_ids: true}`` system has no chunk-level values)."""
    from rag_eval_pipeline.core.metrics.doc_level import levels_of
    from rag_eval_pipeline.core.metrics.names import MEASURES, metric_label
    from rag_eval_pipeline.core.pipeline import scored_levels

    judged = list(levels_of(golden))
    baseline = cfg.baseline_system
    gated = ([baseline] if baseline else []) + (
        cfg.candidate_systems or [s.name for s in cfg.systems if s.name != baseline])
    for t in cfg.thresholds:
        if t.metric not in MEASURES:
            continue
        level = t.level or ("chunk" if "chunk" in judged else "doc")
        label = metric_label(t.metric, t.k)
        for name in gated:
            levels = scored_levels(cfg, golden, name)
            if level in levels:
                continue
            role = "the baseline_system" if name == baseline else "a candidate"
            why = ("its ids are document ids (chunk_map: {doc_ids: true}), so it has no chunk-level values"
                   if "chunk" in judged and level == "chunk" else f"the golden set judges relevance per {judged}")
            fix = ("give relevant_docs in the golden set and level: doc on the threshold" if level == "chunk" else
                   "give relevant_docs in the golden set" if "doc" not in judged else "set level: doc")
            report.warnings.append(
                f"{cfg.path}: gate {label} (level {level}) cannot be computed for {role} {name!r}: {why}; the gate "
                f"will be not_evaluable and {'fail' if t.blocking else 'warn'} on every run ({fix}, or gate a "
                "system whose ids are chunk ids)")


def _calibration_warning(cfg: EvalConfig, report: CheckReport) -> None:
    """A warning when the run's calibration check is certain to fail and block before anything runs: a gate on
    a judge-based metric and no ``calibration`` section. Decided by the run's own rule
    (:func:`core.metrics.calibration_status.calibration_status`, the ``judge_calibrated_above_floor`` check), so
    the two cannot disagree; a calibration that exists but may fail is for the run to measure."""
    from rag_eval_pipeline.core.metrics.calibration_status import calibration_status

    section = cfg.calibration
    if section.configured:
        return
    status = calibration_status(None, configured=False, kappa_floor=section.kappa_floor,
                                gated_metrics=[t.metric for t in cfg.thresholds])
    if status.blocks:
        report.warnings.append(
            f"{cfg.path}: gates.thresholds on judge-based metric(s) {list(status.judge_based_gates)}, and "
            f"{'; '.join(status.failures)}: every run's blocking check judge_calibrated_above_floor will fail "
            "and nothing will be promoted; add a calibration section (calibration: {human_labels: "
            "human_labels.jsonl}, the file may start empty: rag-eval label appends to it), or gate on a "
            "metric the judge does not compute")


def check_baseline(folder: Path, report: CheckReport, *, corpus_version: str | None = None,
                   golden_version: str | None = None) -> None:
    """Add to ``report`` what the regression gate would find in ``folder``'s promoted baseline before comparing.

    Input: a suite's output folder (absent: nothing to check); this run's corpus and golden versions (None:
    unknown). A damaged baseline (``core.baseline.read_baseline``: missing but recorded as promoted, a table
    edited, truncated or of a newer schema version, the recorded hashes gone) is one ``data`` problem naming the
    file and the way back; a baseline evaluated on another corpus or golden version is a note (the gate then
    compares nothing: trec_eval's rule that runs are compared on one collection and one set of topics).
    Raises nothing for a damaged baseline; OSError only for a folder that cannot be listed."""
    from rag_eval_pipeline.core.baseline import BaselineDamaged, read_baseline

    if not folder.is_dir():
        return
    try:
        promoted = read_baseline(folder)
    except BaselineDamaged as exc:
        report.add(DATA, f"the promoted baseline is damaged: {_one_line(exc)}")
        return
    if promoted is None:
        report.notes.append(f"output folder {folder}: no promoted baseline yet (the first passing candidate is "
                            "promoted)")
        return
    manifest = promoted.manifest
    report.notes.append(f"output folder {folder}: promoted baseline {manifest.get('system')!r} "
                        f"(promoted at {manifest.get('promoted_at')}), its tables as recorded")
    for name, now in (("corpus_version", corpus_version), ("golden_version", golden_version)):
        then = manifest.get(name)
        if now and then and str(then) != now:
            report.warnings.append(f"output folder {folder}: the baseline was evaluated on {name} {str(then)[:12]}, "
                                   f"this suite reads {now[:12]}: the regression gate will not compare them (promote "
                                   "again on this version, or restore the old one)")


def _evidence_notes(golden: pl.DataFrame, snapshot: pl.DataFrame, report: CheckReport) -> None:
    """A note listing the golden questions whose evidence (relevant chunks and documents with grade > 0, claim
    support) is on a withdrawn or replaced document: the run's WARN check ``golden_evidence_is_current`` says
    the same after the run; a warning, never a problem."""
    from rag_eval_pipeline.core.metrics.decisions import evidence_chunks

    stale = (evidence_chunks(golden, snapshot, readable_only=False).explode("evidence").drop_nulls("evidence")
             .rename({"evidence": "chunk_id"})
             .join(snapshot.select("chunk_id", "status").unique("chunk_id", keep="first"), on="chunk_id")
             .filter(pl.col("status").is_in(["withdrawn", "replaced"])))
    if stale.height:
        order = {q: i for i, q in enumerate(golden["question_id"].to_list())}
        qids = sorted(set(stale["question_id"].to_list()), key=lambda q: order.get(q, 0))
        report.warnings.append(f"golden set: {len(qids)} question(s) rest on withdrawn or replaced documents "
                               f"(warned, not refused): {qids[:_SHOWN_IDS]}{' ...' if len(qids) > _SHOWN_IDS else ''}")


#: The key a system kind's configuration problem is about when its message names none (what ``preflight`` checks).
_MAIN_KEY = {"python": "callable", "http": "url"}


def _system_line(cfg: EvalConfig, index: int, spec, text: str) -> str:
    """``"<configuration file>, line N: "`` for the problem ``text`` of the ``index``-th system: the line of the
    first of its keys the text names (``headers_from_env``, ``callable``...), else of its kind's main key
    (:data:`_MAIN_KEY`), else of the system's entry; ``""`` when the file cannot be read again."""
    from rag_eval_pipeline.core.yamlio import load_yaml_located

    try:
        lines = load_yaml_located(cfg.path).lines
    except (OSError, EvalError):
        return ""
    keys = [p[2] for p in lines if len(p) == 3 and p[:2] == ("systems", index) and isinstance(p[2], str)]
    named = [k for k in keys if k not in ("name", "kind") and k in text]
    key = named[0] if named else _MAIN_KEY.get(spec.kind)
    line = (lines.get(("systems", index, key)) if key else None) or lines.get(("systems", index, "name"))
    return f"{cfg.path}, line {line}: " if line else f"{cfg.path}: "


def _levels(golden: pl.DataFrame) -> str:
    from rag_eval_pipeline.core.metrics.doc_level import levels_of

    return " and ".join("chunk" if lv == "chunk" else "document" for lv in levels_of(golden))


def _check_system(cfg: EvalConfig, spec, snapshot, golden, version: str, report: CheckReport, *,
                  reach: bool, timeout_s: float, environ, every_question: bool) -> None:
    """One system, by what its kind declares (``core/systems/base.py``): a kind that makes calls runs its
    ``preflight`` (no call is made); a kind that reads files (``watches``) is read as a run reads it;
    a kind that computes in process (``reference``) has nothing to check beyond its section."""
    from rag_eval_pipeline.core.systems.base import SYSTEM_KINDS

    name, kind = spec.name, spec.kind
    where = f"system {name} ({kind})"
    desc = SYSTEM_KINDS.get(kind)
    if desc.makes_calls:
        if desc.preflight is not None:
            for note in desc.preflight(spec, cfg.path.parent, environ, reach):
                report.notes.append(f"{where}: {note}")
        return
    if not desc.watches(spec):
        return
    if snapshot is None or golden is None:  # nothing to check ids against: a log's own format still
        if kind == "logged":
            from rag_eval_pipeline.core.sources.run_logs import load_run_log

            load_run_log(cfg.resolve(spec.path), name, "", "")
        return
    from rag_eval_pipeline.core.pipeline import build_runs
    from rag_eval_pipeline.core.systems.runs import run_files

    info: dict[str, Any] = {}
    runs = build_runs(cfg, snapshot, golden, version, [name], info=info)
    if kind == "logged":  # rows the run keeps but not as the system meant them: a warning each
        from rag_eval_pipeline.core.sources.run_logs import abstention_messages, log_contradictions

        shown, total = log_contradictions(cfg.resolve(spec.path))
        report.warnings.extend(f"{where}: {line}" for line in shown)
        if total > len(shown):
            report.warnings.append(f"{where}: and {total - len(shown)} more such field(s) in {spec.path}")
        n_abstain, first_line = abstention_messages(cfg.resolve(spec.path))
        if n_abstain:
            report.notes.append(f"{where}: {n_abstain} abstain row(s) carry an answer text (first: line {first_line}): "
                                "kept as the abstention message, never judged as an answer")
    _run_rows(cfg, name, runs, golden, report, where, every_question, run_files(cfg, name))
    mapping = info.get(name, {}).get("id_mapping") or {}
    done = {k: v for k, v in mapping.items() if k not in ("ids_as_is", "unmatched_examples") and v}
    if done:
        report.notes.append(f"{where}: id mapping: "
                            + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in done.items()))
    if mapping.get("unmatched_texts"):
        ex = mapping["unmatched_examples"][0]
        report.notes.append(f"{where}: {mapping['unmatched_texts']} passage(s) match no chunk of the snapshot and "
                            f"will be left out of the ranking; first: question {ex['question_id']}, position "
                            f"{ex['position']}: {ex['text']!r}")
    traces = info.get(name, {})
    if kind == "traces" and traces.get("unmatched_traces"):
        report.notes.append(f"{where}: {traces['unmatched_traces']} trace(s) match no golden question; first: "
                            f"{traces['unmatched_examples'][0]}")


def _run_rows(cfg: EvalConfig, name: str, runs: pl.DataFrame, golden: pl.DataFrame, report: CheckReport,
              where: str, every_question: bool = True, files: list[str] | None = None) -> None:
    """What the ``rag_runs`` check would say: one row per golden question (unless metrics.complete); a missing
    row is named by question id and by the run file(s) it is missing from (``files``)."""
    qids = set(golden["question_id"].to_list())
    have = set(runs["question_id"].to_list())
    missing = sorted(qids - have)
    unknown = sorted(have - qids)
    errors = runs.filter(pl.col("decision") == "error").height
    report.notes.append(f"{where}: {runs.height} runs read, {errors} errored, {len(unknown)} outside the golden set "
                        "(left out)" + (f": {unknown[:_SHOWN_IDS]}" if unknown else ""))
    from rag_eval_pipeline.core.systems.error_reasons import error_counts

    counts = error_counts(runs.filter(pl.col("question_id").is_in(sorted(qids)))).get(name)
    limit = cfg.gates.max_run_error_share
    if counts and counts["share"] > limit:  # what the run's blocking check run_errors_within_share will say
        reasons = ", ".join(f"{reason} x {n}" for reason, n in counts["by_reason"].items())
        report.warnings.append(f"{where}: {counts['errors']} of {counts['questions']} runs errored (share "
                               f"{counts['share']:.3f} > gates.max_run_error_share {limit:g}): the run's blocking "
                               f"check run_errors_within_share will fail and nothing will be promoted ({reasons})")
    if missing and not cfg.complete and every_question:
        source = f" in {', '.join(files)}" if files else ""
        report.add(DATA, f"{where}: {len(missing)} golden question(s) have no run row{source}: {missing[:_SHOWN_IDS]}"
                         f"{' ...' if len(missing) > _SHOWN_IDS else ''}; expected one per question (or "
                         "metrics.complete: true to score them as empty retrievals, as trec_eval -c)")


def reach_url(url: str, timeout_s: float = 5.0) -> str | None:
    """One HEAD request to ``url`` (OPTIONS when the server refuses HEAD with 405 or 501): None when a
    server answered (any status but 404, which says the path is wrong), else why not, in one line.
    Makes no other request, sends no body. Definition of the methods: RFC 9110 sections 9.3.2, 9.3.7."""
    import httpx2

    try:
        with httpx2.Client(timeout=timeout_s, follow_redirects=False) as client:
            resp = client.request("HEAD", url)
            if resp.status_code in (405, 501):
                resp = client.request("OPTIONS", url)
    except httpx2.TimeoutException:
        return f"{url} did not answer a HEAD request within {timeout_s:g} s"
    except httpx2.HTTPError as exc:
        return f"{url} cannot be reached ({type(exc).__name__}: {_one_line(exc) or 'no detail'})"
    if resp.status_code == 404:
        return f"{url} answered HEAD with HTTP 404: the server is up but the path is not found"
    return None


def suite_problems_from_error(exc: EvalError) -> Problem:
    """A configuration that does not load (or a suite whose data is absent) as one ``config`` problem."""
    return Problem(CONFIG, _one_line(exc))


__all__ = ["CONFIG", "DATA", "CheckReport", "Problem", "check_baseline", "check_config", "reach_url",
           "suite_problems_from_error"]
