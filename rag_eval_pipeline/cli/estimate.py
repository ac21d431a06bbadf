"""``rag-eval estimate``: the calls and prompt tokens a suite would cost, before spending anything."""

from __future__ import annotations

import argparse
import sys

from rag_eval_pipeline.cli.common import UsageError, add_suite_options, dagster_home, judge_resource, resolve_suite
from rag_eval_pipeline.cli.exit_codes import EXIT_FAILED, EXIT_OK, epilog

NAME = "estimate"


def estimate(args: argparse.Namespace) -> int:
    """Dry run of the judge: how many calls and prompt tokens judging this configuration would cost.

    Builds the snapshot, golden set and runs (no Dagster run, nothing written) and asks the configured
    judge (``RAG_EVAL_JUDGE``) for its estimate; makes no judge call.
    """
    dagster_home()
    from rag_eval_pipeline.core.errors import ConfigError, EvalError
    from rag_eval_pipeline.core.judges.abstention import abstention_phrase, phrases_from_config
    from rag_eval_pipeline.core.judges.base import EstimatesCost
    from rag_eval_pipeline.core.judges.registry import JUDGE_TYPES
    from rag_eval_pipeline.core.pipeline import build_golden, build_runs, build_snapshot
    from rag_eval_pipeline.core.systems.estimate import offline_systems, system_call_lines
    from rag_eval_pipeline.defs.location import check_suite

    suite = resolve_suite(args.suite, args.config)
    try:  # as `run` checks it: the same one line for a suite whose data is absent
        cfg = check_suite(suite).config
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    judge = judge_resource(suite.config_path).get_judge()
    from rag_eval_pipeline.core.systems.kinds.python import PythonSystemConfig
    from rag_eval_pipeline.core.systems.python_callable import load_callable

    for spec in cfg.systems:  # a callable that cannot be imported is said here, not first inside a run
        if isinstance(spec, PythonSystemConfig):
            try:
                load_callable(spec.callable, spec.name, cfg.path.parent)
            except ConfigError as exc:
                raise UsageError(str(exc)) from None
    try:
        snapshot, version = build_snapshot(cfg)
        golden = build_golden(cfg, snapshot)
        offline = offline_systems(cfg)  # live systems are not called by a dry run
        runs = build_runs(cfg, snapshot, golden, version, offline) if offline else None
    except EvalError as exc:
        print(f"rag-eval: {exc}", file=sys.stderr)
        return EXIT_FAILED
    for line in system_call_lines(cfg, golden):
        print(line)
    if cfg.shards > 1:
        from rag_eval_pipeline.core.shards import shard_sizes_line

        print(shard_sizes_line(golden["question_id"], cfg.shards))
    if runs is None:
        print("judge: no offline system to estimate from (live systems' answers exist only after a run)")
        return EXIT_OK
    from rag_eval_pipeline.core.pipeline import doc_id_systems
    from rag_eval_pipeline.core.systems.doc_evidence import JudgingEvidence

    evidence = JudgingEvidence(snapshot, doc_id_systems(cfg))  # a document id's passages: all its chunks
    texts = evidence.texts
    questions = dict(zip(golden["question_id"], golden["question"]))
    phrases = phrases_from_config(cfg.judge.abstention_phrases)
    # what judging calls the judge for: answers with a retrieval whose text does not abstain
    items = [(questions.get(r["question_id"], ""), r["answer"],
              [texts[c] for c in evidence.chunk_ids(r["system"], [h["chunk_id"] for h in r["retrieved"]])
               if c in texts])
             for r in runs.iter_rows(named=True)
             if r["decision"] == "answer" and r["retrieved"] and not abstention_phrase(r["answer"], phrases)]
    if not JUDGE_TYPES.get(cfg.judge.type).makes_calls:  # declared by the judge type
        print(f"judge {judge.name}: {len(items)} answers to judge; it makes no model calls (cost 0)")
        print(support_line(judge, cfg, runs, snapshot, golden))
        return EXIT_OK
    if not isinstance(judge, EstimatesCost):
        print(f"judge {judge.name}: {len(items)} answers to judge; it calls a model but gives no estimate of how "
              "many calls")
        print(support_line(judge, cfg, runs, snapshot, golden))
        return EXIT_OK
    est = judge.dry_run_estimate(items)
    repeats = cfg.judge.repeats
    print(f"judge {judge.name} ({judge.model}): {est['items']} answers, about {est['calls'] * repeats} calls and "
          f"{est['prompt_tokens_est'] * repeats:,} prompt tokens (characters / 4) for {repeats} repeat(s); "
          f"{est['cached_calls']} decomposition calls already cached. Faithfulness only: answer_quality adds "
          "about 4 calls per answer.")
    print(support_line(judge, cfg, runs, snapshot, golden))
    return EXIT_OK


def support_line(judge, cfg, runs, snapshot, golden) -> str:
    """One line: the citation-support and nugget-coverage calls judging ``runs`` would add (one request
    per answer and set of cited chunks, per cited chunk of a claim citing several, an upper bound of
    leave-one-out requests; one nugget request per answer of a question with claims), per repeat."""
    from rag_eval_pipeline.core.citations.judging import support_requests
    from rag_eval_pipeline.core.completeness import nugget_requests
    from rag_eval_pipeline.core.judges.base import EstimatesSupportCost
    from rag_eval_pipeline.core.pipeline import citation_formats, doc_id_systems

    formats, phrases = citation_formats(cfg), cfg.judge.abstention_phrases
    cites, extra = support_requests(runs, snapshot, golden, formats=formats, abstention_phrases=phrases,
                                    doc_id_systems=doc_id_systems(cfg))
    nuggets = nugget_requests(runs, golden, formats=formats, known_chunks=set(snapshot["chunk_id"].to_list()),
                              abstention_phrases=phrases)
    repeats = cfg.judge.repeats
    if not isinstance(judge, EstimatesSupportCost):
        return (f"citations and completeness: {len(cites) * repeats} citation-support requests (+ up to "
                f"{extra * repeats} leave-one-out) and {len(nuggets) * repeats} nugget-coverage requests for "
                f"{repeats} repeat(s); judge {judge.name} makes no model calls (cost 0)")
    est = judge.dry_run_estimate_support(cites + nuggets)
    fam = est["by_family"]
    return (f"citations and completeness: about {est['calls'] * repeats} more calls (citation_support "
            f"{fam.get('citation_support', 0) * repeats}, nugget_coverage {fam.get('nugget_coverage', 0) * repeats}) "
            f"and {est['prompt_tokens_est'] * repeats:,} prompt tokens, plus up to {extra * repeats} leave-one-out "
            f"citation calls, for {repeats} repeat(s); {est['cached_calls']} already cached")


def add(sub) -> None:
    """Register ``rag-eval estimate`` and its options on the subparsers ``sub``."""
    p = sub.add_parser(NAME, help="dry run: judge calls and prompt tokens a suite would cost",
                       description="Count the judge calls and prompt tokens judging a suite would cost; makes no call.",
                       epilog=epilog(NAME), formatter_class=argparse.RawDescriptionHelpFormatter)
    add_suite_options(p, output_help=argparse.SUPPRESS)
    p.set_defaults(func=estimate)
