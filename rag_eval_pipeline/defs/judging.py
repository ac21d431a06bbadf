"""The judging stage: judge_labels and answer_judgements (per-claim verdicts from the suite's judge) and
answer_quality (model-judged answer and context relevance, correctness), the judge resources, and the
checks beside the labels.

The computations are plain functions; :func:`build` declares them as one suite's stage: one step
(Dagster multi-asset ``judging``) that reads ``rag_runs``, ``golden_set`` and ``corpus_snapshot`` once.
Materialising ``answer_quality`` alone runs only its part (the stage can be subset).
"""

from typing import TYPE_CHECKING

import dagster as dg

from rag_eval_pipeline.core.config import JudgeConfig, JudgeConfigError, load_config
from rag_eval_pipeline.core.errors import ConfigError, InputError
from rag_eval_pipeline.core.judges.base import BindsRuns, Judge, judge_stats
from rag_eval_pipeline.core.judges.registry import (
    API_KEY_ENV,
    JUDGE_TYPES,
    build_judge,
    judge_config,
    judge_config_from_json,
    judge_config_to_json,
    resolve_judge,
)
from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.plain_names import VERDICTS
from rag_eval_pipeline.defs.pools import JUDGE_POOL
from rag_eval_pipeline.defs.resources import EvalSettings
from rag_eval_pipeline.defs.scope import SuiteScope

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")

STAGE = "judging"


class JudgeResource(dg.ConfigurableResource):
    """The judge every claim label comes from, built through the registry of judge types: ``type`` picks
    the judge, ``settings`` is the resolved ``judge`` section as JSON (the shared keys, the transport, the
    type's own keys; never a secret), ``api_key`` the endpoint key of a judge that calls one, given only as
    ``dg.EnvVar("RAG_EVAL_JUDGE_API_KEY")`` (Dagster then shows the variable's name, never its value).
    Build one with :func:`select_judge_resource`."""

    type: str = "rule_based"
    settings: str = ""
    api_key: str | None = None

    @classmethod
    def of(cls, type: str = "rule_based", *, api_key: str | None = None, **settings) -> "JudgeResource":
        """A resource built in code (tests, scripts): ``settings`` are keys of a ``judge`` section (shared
        and the type's own), checked as a file's would be; ``api_key`` a literal or a ``dg.EnvVar``."""
        cfg = judge_config(type, **{k: v for k, v in settings.items() if v is not None})
        return cls(type=type, settings=judge_config_to_json(cfg), api_key=api_key)

    def config(self) -> JudgeConfig:
        """The judge settings this resource holds (the defaults of ``type`` when ``settings`` is empty)."""
        if not self.settings:
            return judge_config(self.type)
        return judge_config_from_json(self.settings)

    def get_judge(self) -> Judge:
        """The judge, built by its type (``JUDGE_TYPES``). Raises JudgeConfigError for an incomplete
        setup, ConfigError for a bad ``RAG_EVAL_JUDGE_*`` transport variable, InputError for a bad label file."""
        return build_judge(self.config(), self.api_key)


class JudgeRunConfig(dg.Config):
    """``repeats``: judge every answer this many times (repeat 0 may come from the cache; later ones never do).

    Unset, it is ``judge.repeats`` of the evaluation configuration (default 1).
    """

    repeats: int | None = None


def judge_answers(context: dg.AssetExecutionContext, config: JudgeRunConfig, judge: JudgeResource,
                  settings: EvalSettings, corpus_snapshot: pl.DataFrame, golden_set: pl.DataFrame,
                  rag_runs: pl.DataFrame):
    from rag_eval_pipeline.core.judging import count_downgraded, judge_runs
    from rag_eval_pipeline.core.pipeline import doc_id_systems

    j = judge.get_judge()
    if isinstance(j, BindsRuns):  # human labels are matched to answers through the runs they label
        j.bind_runs(rag_runs)
    repeats = config.repeats or settings.config.judge.repeats
    labels, judgements = judge_runs(rag_runs, corpus_snapshot, j, repeats=repeats,
                                    questions=golden_set.select("question_id", "question"),
                                    progress=lambda p: context.log.info(progress_line(p)),
                                    abstention_phrases=settings.config.judge.abstention_phrases,
                                    doc_id_systems=doc_id_systems(settings.config))
    verdicts = dict(labels.group_by("verdict").len().iter_rows())
    statuses = dict(judgements.group_by("status").len().iter_rows())
    generators = set(rag_runs["model"].drop_nulls().to_list())
    self_judging = sorted(generators & {j.model})
    if self_judging:
        context.log.warning(f"judge model {j.model} also generated answers: self-judging bias")
    yield dg.Output(labels, output_name="judge_labels", metadata={
        "judge": j.name, "judge_model": j.model, "prompt_sha256": j.prompt_sha256,
        "verdicts": dg.MetadataValue.json(verdicts), "claims": labels.height,
        "supported_downgraded_quote_not_found": count_downgraded(labels),
        "self_judging_warning": ", ".join(self_judging) or "none",
    })
    yield dg.Output(judgements, output_name="answer_judgements", metadata={
        "statuses": dg.MetadataValue.json(statuses), "repeats": repeats,
        # calls, prompt/completion tokens and seconds spent by a model judge (none for the rule-based one)
        "judge_stats": dg.MetadataValue.json(judge_stats(j)),
        # the configured judge and its transport settings, and which variables overrode the file
        "judge_settings": dg.MetadataValue.json(judge_settings_metadata(settings.config.judge)),
    })


def every_answer_has_a_judgement(answer_judgements: pl.DataFrame, rag_runs: pl.DataFrame) -> dg.AssetCheckResult:
    repeats = answer_judgements["repeat"].unique().to_list() or [0]
    repeat_frame = pl.DataFrame({"repeat": repeats}, schema={"repeat": pl.Int32})
    expected = rag_runs.select("system", "question_id").join(repeat_frame, how="cross")
    missing = expected.join(answer_judgements.select("system", "question_id", "repeat"),
                            on=["system", "question_id", "repeat"], how="anti")
    return dg.AssetCheckResult(
        passed=missing.height == 0,
        metadata={"missing": dg.MetadataValue.json(
            [f"{r['system']}/{r['question_id']}#{r['repeat']}" for r in missing.head(50).iter_rows(named=True)]),
            "expected": expected.height},
    )


def progress_line(p: dict) -> str:
    """One log line from a ``core.judging.JudgingProgress`` dict: done/total, errors, calls per second."""
    pct = 100.0 * p["done"] / p["total"] if p["total"] else 100.0
    return (f"judging {'done' if p['final'] else 'progress'}: {p['done']}/{p['total']} answers ({pct:.0f}%), "
            f"{p['errors']} judge errors, {p['calls']} judge calls, {p['calls_per_s']:.1f} calls/s, "
            f"{p['elapsed_s']:.1f} s")


def verdicts_in_allowed_set(judge_labels: pl.DataFrame) -> dg.AssetCheckResult:
    bad = judge_labels.filter(~pl.col("verdict").is_in(list(VERDICTS)))
    unverified = judge_labels.filter((pl.col("verdict") == "SUPPORTED") & ~pl.col("quote_found").fill_null(False))
    return dg.AssetCheckResult(
        passed=bad.height == 0 and unverified.height == 0,
        metadata={
            "bad_verdict_claim_ids": dg.MetadataValue.json(bad["claim_id"].to_list()[:50]),
            "supported_without_verified_quote": dg.MetadataValue.json(unverified["claim_id"].to_list()[:50]),
        },
    )


#: At most this many distinct judge-error reasons are listed (the most frequent first); the rest are counted.
MAX_ERROR_REASONS = 5
_REASON_CHARS = 200


def judge_error_reasons(errors: pl.DataFrame, limit: int = MAX_ERROR_REASONS) -> list[str]:
    """The distinct reasons of JUDGE_ERROR rows with their counts, most frequent first (ties by text):
    ``["truncated: JSON ends early after 39 characters (after 2 attempt(s)) × 3", ...]``, each cut to 200
    characters, at most ``limit`` of them, then ``"... and N more reason(s) (K rows)"``; ``[]`` for no rows.
    Input: judge_labels rows (column ``error``; null or blank counts as "(no reason given)")."""
    if errors.height == 0:
        return []
    counts: dict[str, int] = {}
    for text in errors["error"].to_list():
        reason = (text or "").strip() or "(no reason given)"
        reason = reason if len(reason) <= _REASON_CHARS else reason[:_REASON_CHARS - 3] + "..."
        counts[reason] = counts.get(reason, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    lines = [f"{reason} \u00d7 {n}" for reason, n in ranked[:limit]]
    rest = ranked[limit:]
    if rest:
        lines.append(f"... and {len(rest)} more reason(s) ({sum(n for _, n in rest)} rows)")
    return lines


def judge_error_share(settings: EvalSettings, judge_labels: pl.DataFrame) -> dg.AssetCheckResult:
    limit = settings.config.max_judge_error_share
    errors = judge_labels.filter(pl.col("verdict") == "JUDGE_ERROR")
    share = errors.height / judge_labels.height if judge_labels.height else 0.0
    reasons = judge_error_reasons(errors)
    # the CLI prints "summary" beside the check, and a failed check's metadata in full: the reasons are on
    # the console, not only in judge_labels.parquet
    summary = (f"{errors.height} of {judge_labels.height} labels are judge errors (share {share:.3f}, limit "
               f"{limit:g}): {'; '.join(reasons)}") if reasons else ""
    return dg.AssetCheckResult(
        passed=share <= limit,
        metadata={**({"summary": summary} if summary else {}), "judge_errors": errors.height,
                  "labels": judge_labels.height, "share": share, "limit": limit,
                  "error_reasons": dg.MetadataValue.json(reasons),
                  "error_claim_ids": dg.MetadataValue.json(errors["claim_id"].to_list()[:50])},
    )


def judge_settings_metadata(judge: JudgeConfig) -> dict:
    """The judge settings a run used, for its metadata: type and where it came from, the transport's
    timeout_s / max_retries / backoff_s / concurrency / rate_limit_per_s, model and base URL, and the
    environment variables that overrode the file (never the API key)."""
    return {"type": judge.type, "type_source": judge.type_source, "model": judge.model, "base_url": judge.base_url,
            "timeout_s": judge.timeout_s, "max_retries": judge.max_retries, "backoff_s": judge.backoff_s,
            "concurrency": judge.concurrency, "rate_limit_per_s": judge.rate_limit_per_s,
            "repeats": judge.repeats, "from_env": list(judge.from_env)}


def judge_settings(config_path: str | None = None) -> JudgeConfig:
    """The judge settings of the configuration at ``config_path`` with the environment's overrides.

    Without a path (or when the file cannot be loaded for a reason outside its ``judge`` section,
    which the run then reports when it loads the configuration), the ``judge`` section is read
    alone, else the defaults apply; the environment overrides either way (``core.config.JUDGE_ENV``).
    Raises JudgeConfigError (a ConfigError and ValueError) for a judge that cannot be built.
    """
    from pathlib import Path

    if config_path is None:
        return resolve_judge(None, path=Path("<environment>"))
    try:
        return load_config(config_path).judge
    except JudgeConfigError:
        raise
    except ConfigError:
        from rag_eval_pipeline.core.yamlio import load_yaml

        try:
            raw = load_yaml(config_path)
        except InputError:
            raw = None
        section = raw.get("judge") if isinstance(raw, dict) else None
        try:
            return resolve_judge(section if isinstance(section, dict) else None, path=Path(config_path))
        except JudgeConfigError:
            raise
        except ConfigError:
            return resolve_judge(None, path=Path(config_path))


def select_judge_resource(judge: JudgeConfig | None = None, *, config_path: str | None = None) -> JudgeResource:
    """The judge resource for ``judge`` settings (default: :func:`judge_settings` of ``config_path``).

    ``judge.type`` of the configuration picks the judge; ``RAG_EVAL_JUDGE`` in the environment
    overrides it (rule_based when neither is set). A judge type that calls an endpoint reads its API key
    through ``dg.EnvVar("RAG_EVAL_JUDGE_API_KEY")``, never from the file. One call per suite gives that
    suite's judge. Raises JudgeConfigError (one line, before any run starts) for an unknown judge name,
    a model endpoint without base URL or model, or human labels without a label file.
    """
    cfg = judge if judge is not None else judge_settings(config_path)
    judge_type = JUDGE_TYPES.get(cfg.type)
    if judge_type.check is not None:
        judge_type.check(cfg, f"judge type {cfg.type}", str(config_path or "the configuration"))
    api_key = dg.EnvVar(API_KEY_ENV) if judge_type.makes_calls else None
    return JudgeResource(type=cfg.type, settings=judge_config_to_json(cfg), api_key=api_key)


def answer_quality(context: dg.AssetExecutionContext, judge: JudgeResource, settings: EvalSettings,
                   corpus_snapshot: pl.DataFrame, golden_set: pl.DataFrame,
                   rag_runs: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    """Answer relevance, context relevance, correctness and the holistic label, from a model judge.

    Empty (with the reason in metadata) when the configured judge has no such methods: the rule-based
    baseline judges faithfulness only; lexical correctness comes from ``question_metrics`` regardless.
    """
    from rag_eval_pipeline.core.answer_quality import _SCHEMA, answer_quality_metrics, supports_quality

    j = judge.get_judge()
    # the judge key the table's file records (core/table_files.py): this judge, whatever judge_labels holds
    judge_key = dg.MetadataValue.json({"judge": j.name, "judge_model": j.model, "prompt_sha256": j.prompt_sha256})
    if not supports_quality(j):
        return dg.Output(pl.DataFrame(schema=_SCHEMA), metadata={
            "evaluated": False, "judge_key": judge_key,
            "reason": f"judge {j.name} has no answer-relevance / context-relevance / correctness methods"})
    embed = None
    if settings.config.judge.reverse_questions:
        from rag_eval_pipeline.core.retrieval.dense import load_encoder

        encoder = load_encoder("all-MiniLM-L6-v2", "cpu")
        embed = lambda texts: encoder.encode(texts, convert_to_numpy=True)  # noqa: E731
    from rag_eval_pipeline.core.pipeline import doc_id_systems

    quality = answer_quality_metrics(rag_runs, golden_set, corpus_snapshot, j, embed=embed,
                                     doc_id_systems=doc_id_systems(settings.config))
    errors = int((quality["status"] == "judge_error").sum())
    return dg.Output(quality, metadata={"evaluated": True, "judge_key": judge_key, "judge_model": j.model,
                                        "rows": quality.height,
                                        "judge_errors": errors, "reverse_questions": embed is not None})


DESCRIPTIONS = {
    "judge_labels": "One claim of one answer, judged once.",
    "answer_judgements": "Why each answer has (or lacks) claim labels.",
    "answer_quality": answer_quality.__doc__,
}
CHECK_DESCRIPTIONS = {
    "every_answer_has_a_judgement": "Every run row of every system has a judgement for every repeat (labels are "
                                    "complete).",
    "verdicts_in_allowed_set": "Every verdict is in the allowed set; SUPPORTED always carries a verified quote.",
    "judge_error_share": "JUDGE_ERROR labels stay below the configured share.",
}


def build(scope: SuiteScope) -> tuple[list, list]:
    """(assets, checks) of the judging stage for ``scope``.

    One step reads ``rag_runs``, ``golden_set`` and ``corpus_snapshot``; the lineage draws each table from
    the nearest table it is computed from (``judge_labels`` from all three; ``answer_judgements`` and
    ``answer_quality`` from ``rag_runs``, whose own upstream are the other two). In the shard layer the step
    is one shard's and has no check; in a sharded full evaluation the stage declares only the checks (the
    tables are merged by ``defs/shards.py``)."""
    outs = {name: dg.AssetOut(key=scope.key(name), kinds={"polars", "parquet"}, is_required=False,
                              description=scope.describe(text), io_manager_key=scope.io_manager_key,
                              group_name=scope.group(STAGE), tags={"stage": STAGE})
            for name, text in DESCRIPTIONS.items()}
    assets = []
    if scope.declares("judge_labels"):
        runs, golden, corpus = scope.key("rag_runs"), scope.key("golden_set"), scope.key("corpus_snapshot")

        @dg.multi_asset(name=scope.op(STAGE), outs=outs, ins=scope.ins("rag_runs", "golden_set", "corpus_snapshot"),
                        partitions_def=scope.partitions_def,  # one step per question shard in the shard layer
                        pool=JUDGE_POOL,  # a step that calls the judge holds a slot of the judge pool (defs/pools.py)
                        internal_asset_deps={"judge_labels": {runs, golden, corpus}, "answer_judgements": {runs},
                                             "answer_quality": {runs}},
                        can_subset=True, required_resource_keys=scope.needs("settings", "judge"))
        def judging(context: dg.AssetExecutionContext, config: JudgeRunConfig, rag_runs: pl.DataFrame,
                    golden_set: pl.DataFrame, corpus_snapshot: pl.DataFrame):
            selected = context.selected_output_names
            settings, judge = scope.settings(context), scope.judge(context)
            golden_set = scope.shard_rows(context, golden_set)
            if selected & {"judge_labels", "answer_judgements"}:  # one judging pass gives both
                for output in judge_answers(context, config, judge, settings, corpus_snapshot, golden_set, rag_runs):
                    if output.output_name in selected:
                        yield output
            if "answer_quality" in selected:
                quality = answer_quality(context, judge, settings, corpus_snapshot, golden_set, rag_runs)
                yield dg.Output(quality.value, output_name="answer_quality", metadata=quality.metadata)

        assets.append(judging)
    if scope.shard_layer:
        return assets, []

    @dg.asset_check(asset=scope.key("answer_judgements"), name="every_answer_has_a_judgement", blocking=True,
                    additional_ins=scope.ins("rag_runs"),
                    description=CHECK_DESCRIPTIONS["every_answer_has_a_judgement"])
    def judgements_complete(answer_judgements: pl.DataFrame, rag_runs: pl.DataFrame) -> dg.AssetCheckResult:
        return every_answer_has_a_judgement(answer_judgements, rag_runs)

    @dg.asset_check(asset=scope.key("judge_labels"), name="verdicts_in_allowed_set", blocking=True,
                    description=CHECK_DESCRIPTIONS["verdicts_in_allowed_set"])
    def verdicts(judge_labels: pl.DataFrame) -> dg.AssetCheckResult:
        return verdicts_in_allowed_set(judge_labels)

    @dg.asset_check(asset=scope.key("judge_labels"), name="judge_error_share", blocking=True,
                    required_resource_keys=scope.needs("settings"), description=CHECK_DESCRIPTIONS["judge_error_share"])
    def error_share(context, judge_labels: pl.DataFrame) -> dg.AssetCheckResult:
        return judge_error_share(scope.settings(context), judge_labels)

    return assets, [judgements_complete, verdicts, error_share]
