"""``rag-eval compare A B``: any two runs side by side, offline, from the Parquet tables alone.

A side is ``system:NAME`` (the suite's latest run), ``baseline`` (the promoted baseline), ``night:YYYY-MM-DD[:NAME]``
or ``run:RUN_ID[:NAME]`` (a past full run recorded in ``metric_history``), or ``dir:PATH[:NAME]`` (another output
folder); see ``core/report/compare_sides.py``. Writes ``compare-<A>--<B>.html`` and ``.md`` (every metric with
both values, the difference, the paired test and interval; then question by question, regressions first) to
``--out`` (default ``<suite folder>/compare/``, which ``rag-eval serve`` serves) and prints the headline.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from pathlib import Path

from rag_eval_pipeline.cli.common import UsageError, add_suite_options, resolve_suite, suite_folder
from rag_eval_pipeline.cli.exit_codes import EXIT_FAILED, EXIT_OK, epilog
from rag_eval_pipeline.core.metrics.names import KEY_METRICS, metric_label

NAME = "compare"
#: Metrics printed on the terminal (all are on the page): the registry's key metrics, plus any the test calls real.
PRINTED = tuple(metric_label(m, k) for m, k in KEY_METRICS)


def slug(text: str) -> str:
    """A file-name-safe form of a side as written: ``night:2026-11-30:team_rag`` -> ``night-2026-11-30-team_rag``."""
    return re.sub(r"[^A-Za-z0-9_.]+", "-", text).strip("-.")[:80] or "side"


def compare(args: argparse.Namespace) -> int:
    """``rag-eval compare``: resolve both sides, compare, write the pages, print the headline. Exit codes: see
    ``cli/exit_codes.py``."""
    import polars as pl

    from rag_eval_pipeline.core.config import load_config
    from rag_eval_pipeline.core.errors import ConfigError, InputError
    from rag_eval_pipeline.core.report.compare import build_comparison, question_labels
    from rag_eval_pipeline.core.report.compare_sides import SideError, parse_side, read_table, resolve_side
    from rag_eval_pipeline.core.storage import write_text_atomic

    if args.questions < 0 or args.permutations < 1:
        raise UsageError("--questions must be >= 0 and --permutations >= 1")
    suite = resolve_suite(args.suite, args.config)
    folder = suite_folder(suite, args.output)
    try:  # the suite's readers decide what text the pages may show: never guessed when the file does not load
        cfg = load_config(suite.config_path)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    groups, seed = tuple(cfg.report.viewer_groups), cfg.seed
    try:
        specs = [parse_side(args.a), parse_side(args.b)]
        # a side that names its system first, so that the other can take the same system
        order = sorted(range(2), key=lambda i: specs[i].system is None and specs[i].kind != "baseline")
        sides: list = [None, None]
        for i in order:
            other = sides[1 - i]
            sides[i] = resolve_side(specs[i], folder, other.system if other is not None else None)
        a, b = sides
        if args.metric:  # a typo would rank nothing and print empty tables
            labels = question_labels(a, b, args.split)
            unknown = [m for m in args.metric if m not in labels]
            if unknown:
                raise UsageError(f"--metric {unknown[0]!r} is not a per-question metric of these runs; expected one "
                                 f"of {sorted(labels)}")
        tables = {}
        folders = list(dict.fromkeys([folder, a.folder, b.folder]))  # the suite's, then each side's
        for name in ("golden_set", "corpus_snapshot"):
            frames = [t for t in (read_table(f / f"{name}.parquet") for f in folders) if t is not None]
            tables[name] = (pl.concat(frames, how="diagonal_relaxed").unique(
                subset="question_id" if name == "golden_set" else "chunk_id", keep="first") if frames else None)
        if tables["corpus_snapshot"] is None:
            raise InputError(f"{folder / 'corpus_snapshot.parquet'}: not found: the corpus snapshot, needed to "
                             "withhold restricted text (run rag-eval run first)")
        comparison = build_comparison(a, b, split=args.split, golden=tables["golden_set"],
                                      snapshot=tables["corpus_snapshot"], viewer_groups=groups,
                                      n_permutations=args.permutations, seed=seed, max_questions=args.questions,
                                      metrics=args.metric or None, generated_at=dt.datetime.now(dt.UTC))
    except SideError as exc:
        raise UsageError(str(exc)) from None
    except InputError as exc:
        print(f"rag-eval compare: {exc}", file=sys.stderr)
        return EXIT_FAILED
    out = Path(args.out).resolve() if args.out else folder / "compare"
    out.mkdir(parents=True, exist_ok=True)
    stem = f"compare-{slug(args.a)}--{slug(args.b)}"
    html = write_text_atomic(comparison.html, out / f"{stem}.html")
    md = write_text_atomic(comparison.markdown, out / f"{stem}.md")

    print(f"A: {args.a} = {a.label}")
    print(f"B: {args.b} = {b.label}")
    for n in comparison.notes:
        print(f"note: {n}")
    rows = comparison.metrics
    print(f"\nsplit {args.split}: {sum(m.direction == 'better' for m in rows)} metric(s) better, "
          f"{sum(m.direction == 'worse' for m in rows)} worse, {sum(m.direction == 'same' for m in rows)} the same "
          f"(difference = B - A)")
    print("A, B, diff, p and the 95% CI are over the same n questions (both sides have a value); 'own' is each "
          "side's mean over its own questions, not compared")
    print(f"{'metric':<32} {'A':>8} {'B':>8} {'diff':>9} {'p':>7}  95% CI             {'n':<16} B vs A")
    f = lambda v: "null" if v is None else f"{v:.4f}"  # noqa: E731
    for m in rows:
        if m.label not in PRINTED and not (m.p_value is not None and m.p_value < 0.05):
            continue
        ci = "" if m.ci_low is None else f"[{m.ci_low:+.4f}, {m.ci_high:+.4f}]"
        own_a, own_b = f(m.a and m.a["value"]), f(m.b and m.b["value"])
        if m.paired:
            n = str(m.n_pairs) + (f" (A {m.n_a}, B {m.n_b})" if (m.n_a, m.n_b) != (m.n_pairs, m.n_pairs) else "")
            shown = (f(m.a_mean), f(m.b_mean))
            own = f"   (own: A {own_a} n {m.n_a}, B {own_b} n {m.n_b})" if n != str(m.n_pairs) else ""
        else:  # a side without per-question values: the headline means, untested
            n, shown, own = "not paired", (own_a, own_b), ""
        print(f"{m.label:<32} {shown[0]:>8} {shown[1]:>8} "
              f"{'' if m.difference is None else f'{m.difference:+.4f}':>9} {f(m.p_value):>7}  {ci:<18} "
              f"{n:<16} {m.direction}{own}")
    regressed = [q for q in comparison.questions if q.regressed]
    print(f"\n{len(comparison.questions)} question(s) changed, {len(regressed)} with a regression, "
          f"{comparison.unchanged} unchanged")
    if regressed:
        # B - A, the sign convention of the diff column (a lower-is-better rate rising is +, and worse)
        print("largest regressions (B - A): " + ", ".join(
            f"{q.question_id} ({q.key_row[0]} {q.key_row[1]:.4f} -> {q.key_row[2]:.4f}: "
            f"{q.key_row[2] - q.key_row[1]:+.4f}, worse)" for q in regressed[:5]))
    print(f"\ncomparison: {html}\n            {md}")
    return EXIT_OK


def add(sub) -> None:
    """Register ``rag-eval compare`` and its options on the subparsers ``sub``."""
    from rag_eval_pipeline.core.plain_names import COMPARE_SIDE_SYNTAX as SYNTAX
    from rag_eval_pipeline.core.plain_names import GATE_SPLITS

    p = sub.add_parser(NAME, help="compare any two runs: every metric with a paired test, then question by question",
                       description="Compare side B with side A from the Parquet tables alone: every metric with both "
                                   "values, B - A, the gates' paired randomisation test and 95% interval; then the "
                                   "changed questions, regressions first, with both answers, retrievals, verdicts "
                                   "and citations. A side: " + SYNTAX + ".",
                       epilog=epilog(NAME), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", metavar="A", help="the reference side (e.g. baseline, night:2026-11-30)")
    p.add_argument("b", metavar="B", help="the side compared with it (e.g. system:team_rag)")
    add_suite_options(p)
    p.add_argument("--output", help="the suite's output folder, as given to rag-eval run (default: outputs/<suite>/ "
                                    "or $RAG_EVAL_OUTPUT_DIR/<suite>/)")
    p.add_argument("--split", default="all", choices=GATE_SPLITS,
                   help="the golden split compared: all (default), test or dev")
    p.add_argument("--out", help="where the pages go (default: <suite folder>/compare/, served by rag-eval serve)")
    p.add_argument("--questions", type=int, default=200, help="question cards on the page (default 200)")
    p.add_argument("--metric", action="append",
                   help="a metric (trec_eval label, e.g. recall_5) that ranks the questions; repeatable (default: "
                        "every per-question metric but trec_eval's counts)")
    p.add_argument("--permutations", type=int, default=10000,
                   help="random sign flips of the paired test (default 10000, as the gates)")
    p.set_defaults(func=compare)
