"""A trec_eval-compatible command line for the retrieval measures this package implements.

Usage::

    python -m rag_eval_pipeline.trec_eval [-q] [-c] [-l N] [-m MEASURE ...] [--mode trec_eval|system] QRELS RUN

Prints what trec_eval 10.0 prints for the same measures, byte for byte: ``%-22s\\t%s\\t%6.4f`` lines
(``%ld`` for counts, ``%s`` for runid), per-query blocks in byte order of the topic id when ``-q``
is given, then the ``all`` block. Per-query lines leave out ``runid``, ``num_q`` and ``gm_map``
(trec_eval prints those only in the summary).

Measures (``-m``, repeatable, several words after one ``-m``; trec_eval syntax
``name[.cutoff,cutoff...]``, the printed form ``name_cutoff`` such as ``ndcg_cut_10``, or a readable
alias such as ``ndcg@10``): ``num_q``, ``num_ret``, ``num_rel``, ``num_rel_ret``, ``map``,
``gm_map``, ``Rprec``, ``bpref``, ``recip_rank``, ``P``, ``recall``, ``ndcg`` (full depth, ``m_ndcg.c``, default
gains only), ``ndcg_cut``, ``success``, plus this package's ``F1`` and ``recip_rank_cut``; the
nicknames ``official`` (the default) and ``all_trec`` select the subset of trec_eval's sets that is
implemented here (``iprec_at_recall``, ``infAP`` and the others are not; a note on
stderr lists what a nickname left out). Default cutoffs are trec_eval's: 5..1000 for P, recall and
ndcg_cut, 1,5,10 for success. The default ranking mode is trec_eval's (``--mode trec_eval``).
``-c`` averages over every qrels topic (missing topics score 0), ``-l N`` sets the relevance
level of the binary measures, ``--mode system`` ranks by the rank column instead of trec_eval's
score order. Exit status: 0, 1 for a usage or measure error, 2 for
an unreadable or malformed input file, 7 when no topic has both results and judgments (as
trec_eval). Source: trec_eval 10.0 ``trec_eval.c``, ``meas_print_single.c``,
``meas_print_final.c``, ``measures.c``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence

import polars as pl

from rag_eval_pipeline.core.errors import ConfigError, EvalError, InputError
from rag_eval_pipeline.core.metrics.retrieval import (
    COUNT_MEASURES,
    CUT_MEASURES,
    RANKING_MODES,
    UNCUT_MEASURES,
    parse_measure,
    retrieval_question_metrics,
    trec_eval_aggregate,
    trec_name,
)
from rag_eval_pipeline.core.sources.trec import read_trec_qrels, read_trec_run

LONG_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
#: Supported measures in trec_eval's print order (``measures.c``), with default cutoffs.
PRINT_ORDER: dict[str, tuple[int, ...] | None] = {
    "runid": None,
    "num_q": None,
    "num_ret": None,
    "num_rel": None,
    "num_rel_ret": None,
    "map": None,
    "gm_map": None,
    "Rprec": None,
    "bpref": None,
    "recip_rank": None,
    "P": LONG_CUTOFFS,
    "recall": LONG_CUTOFFS,
    "ndcg": None,
    "ndcg_cut": LONG_CUTOFFS,
    "success": (1, 5, 10),
    "F1": LONG_CUTOFFS,
    "recip_rank_cut": LONG_CUTOFFS,
}
NICKNAMES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # nickname: (implemented members, trec_eval members not implemented here)
    "official": (("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                  "recip_rank", "P"), ("iprec_at_recall",)),
    "all_trec": (("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                  "recip_rank", "P", "recall", "ndcg", "ndcg_cut", "success"),
                 ("iprec_at_recall", "relstring", "infAP", "gm_bpref", "Rprec_mult", "utility",
                  "11pt_avg", "binG", "G", "ndcg_rel", "Rndcg", "map_cut", "relative_P", "set_P",
                  "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "rbp",
                  "rbp_resid", "unj")),
}
SUMMARY_ONLY = ("runid", "num_q", "gm_map")
INT_MEASURES = ("num_q",) + COUNT_MEASURES


def _parse_cutoffs(measure: str, text: str) -> tuple[int, ...]:
    out = set()
    for part in text.split(","):
        try:
            value = int(float(part))  # trec_eval reads cutoffs with atol: "23.4" -> 23
        except ValueError:
            raise ConfigError(f"illegal measure '{measure}.{text}': cutoff {part!r} is not a number") from None
        if value < 1:
            raise ConfigError(f"illegal measure '{measure}.{text}': cutoffs must be >= 1")
        out.add(value)
    return tuple(sorted(out))


def _spec_parts(spec: str) -> tuple[str, str]:
    """``(measure, parameters)`` of one ``-m`` value in any accepted spelling.

    trec_eval's ``name[.params]`` first; then ``name_k`` as trec_eval prints it (``ndcg_cut_10``,
    ``recall_100``); then a readable alias (``ndcg@10``, ``mrr``, ``hit@5``).
    """
    name, _, params = spec.partition(".")
    if name in PRINT_ORDER or name in NICKNAMES:
        return name, params
    try:
        base, k = parse_measure(spec)
    except ConfigError:
        return name, params  # reported as an illegal measure by the caller
    if base in PRINT_ORDER:
        return base, "" if k is None else str(k)
    return name, params


def is_measure(spec: str) -> bool:
    """True when ``spec`` names a measure or nickname this command accepts (in any spelling)."""
    name, _ = _spec_parts(spec)
    return name in PRINT_ORDER or name in NICKNAMES


def select_measures(specs: Sequence[str] | None) -> tuple[dict[str, tuple[int, ...] | None], list[str]]:
    """Measures to print, from the ``-m`` arguments.

    Input: the ``-m`` values in trec_eval's syntax (``"P.5,10"``, ``"ndcg_cut"``, ``"ndcg"``,
    ``"all_trec"``), as trec_eval prints them (``"ndcg_cut_10"``, ``"recall_100"``), or as readable
    aliases (``"ndcg@10"``, ``"mrr"``); None means ``official``. A measure named twice keeps its
    last cutoffs, except that printed names with one cutoff each add up (``P_5 P_10`` = ``P.5,10``).
    Output: (measure -> cutoffs or None, in print order; trec_eval measures a nickname named that
    are not implemented here). Raises ConfigError for an unknown measure, a measure trec_eval has
    but this package does not implement, gain parameters on ``ndcg``, or bad cutoffs. Source:
    trec_eval ``trec_eval.c`` (``mark_measure``) and ``measures.c`` (nicknames, print order).
    """
    chosen: dict[str, tuple[int, ...] | None] = {}
    single: dict[str, set[int]] = {}
    left_out: list[str] = []
    for spec in specs or ["official"]:
        name, params = _spec_parts(spec)
        if name in NICKNAMES:
            members, skipped = NICKNAMES[name]
            for m in members:
                chosen.setdefault(m, PRINT_ORDER[m])
            left_out.extend(s for s in skipped if s not in left_out)
            continue
        if name not in PRINT_ORDER:
            from rag_eval_pipeline.core.section_errors import did_you_mean

            hint = did_you_mean([name], [*PRINT_ORDER, *NICKNAMES]).strip(" ()")
            raise ConfigError(f"illegal measure '{spec}'" + (f" ({hint})" if hint else "")
                              + f" (implemented: {', '.join(PRINT_ORDER)}; nicknames: {', '.join(NICKNAMES)}; also "
                              "as printed, e.g. ndcg_cut_10)")
        cut = PRINT_ORDER[name]
        if params:
            if cut is None:
                what = "gain parameters are not implemented" if name == "ndcg" else f"{name} takes no parameters"
                raise ConfigError(f"illegal measure '{spec}': {what}")
            cut = _parse_cutoffs(name, params)
            if "." not in spec:  # one printed name, e.g. recall_100: cutoffs accumulate
                single.setdefault(name, set()).update(cut)
                cut = tuple(sorted(single[name]))
        chosen[name] = cut
    return {m: chosen[m] for m in PRINT_ORDER if m in chosen}, left_out


def _fmt(measure: str, qid: str, value) -> str:
    if measure == "runid":
        return f"{measure:<22}\t{qid}\t{value}"
    if measure in INT_MEASURES:
        return f"{measure:<22}\t{qid}\t{int(round(value))}"
    return f"{measure:<22}\t{qid}\t{value:6.4f}"


def _duplicate_lines(run_path: str, message: str) -> str:
    """`` (lines 1, 3)``: the run file's lines of the duplicated (topic, docno) the message names, or ''."""
    found = re.search(r"question '([^']*)': chunk '([^']*)'", message)
    if found is None:
        return ""
    topic, docno = found.groups()
    with open(run_path, encoding="utf-8", errors="replace") as fh:
        lines = [n for n, line in enumerate(fh, 1) if (f := line.split())[:1] == [topic] and f[2:3] == [docno]]
    return f" (lines {', '.join(map(str, lines))})" if len(lines) > 1 else ""


def evaluate(qrels_path: str, run_path: str, *, query_flag: bool = False, complete: bool = False,
             rel_level: int = 1, measures: Sequence[str] | None = None, mode: str = "trec_eval") -> list[str]:
    """Evaluate a TREC run against TREC qrels and return trec_eval's output lines (no newlines).

    Inputs: file paths; flags as trec_eval's ``-q``, ``-c``, ``-l``, ``-m``; ``mode`` ``trec_eval``
    (rank by score, ties by docno descending) or ``system`` (rank by the rank column).
    Output: the lines trec_eval prints for the implemented measures. Raises InputError for a
    malformed file (with file, line and field), ConfigError for a bad measure or option, and
    EvalError when no topic has both results and judgments. Source: trec_eval 10.0 ``trec_eval.c``.
    """
    chosen, _ = select_measures(measures)
    qrels = read_trec_qrels(qrels_path)
    run = read_trec_run(run_path)
    if run.height == 0:
        raise InputError("no results lines", path=run_path)
    runid = run["system"][-1]  # trec_eval keeps the runid of the last line (get_trec_results.c)
    run = run.with_columns(pl.lit(runid).alias("system"))

    ks = sorted({k for m, cut in chosen.items() if m in CUT_MEASURES for k in cut or ()})
    wanted = [m for m in chosen if m in CUT_MEASURES or m in UNCUT_MEASURES]
    if "gm_map" in chosen and "map" not in wanted:
        wanted.append("map")
    for m in COUNT_MEASURES:
        if m not in wanted:
            wanted.append(m)  # cheap, and keeps every evaluated topic visible in per_question
    try:
        ev = retrieval_question_metrics(run, qrels, ks=ks or (1,), measures=wanted, mode=mode,
                                        rel_level=rel_level, complete=complete)
    except InputError as exc:
        if exc.path is not None or exc.field != "chunk_id":
            raise
        # a docno twice for one topic: name the run file, and drop the pipeline's on_duplicate hint (no
        # such option here; trec_eval itself stops on duplicate docs)
        message = str(exc).split(": ", 1)[1].split("; use on_duplicate", 1)[0]
        raise InputError(message.replace("chunk ", "docno ", 1) + _duplicate_lines(run_path, message)
                         + "; expected each docno once per topic", path=run_path, field="docno") from None
    pq = ev.per_question
    if pq.height == 0:
        raise EvalError("No queries with both results and relevance info")
    summary = trec_eval_aggregate(pq)
    lookup_all = {(r["metric"], r["k"]): r["value"] for r in summary.iter_rows(named=True)}

    names: list[tuple[str, str, int | None]] = []  # (printed name, metric, k)
    for m, cut in chosen.items():
        if cut is not None:  # exactly the cut measures (CUT_MEASURES) have cutoffs
            names.extend((trec_name(m, k), m, k) for k in cut)
        else:
            names.append((m, m, None))

    lines: list[str] = []
    if query_flag:
        wide = (pq.with_columns(pl.col("value").fill_null(0.0))
                .select("question_id", "metric", "k", "value"))
        per_q: dict[str, dict[tuple[str, int | None], float]] = {}
        for qid, metric, k, value in wide.iter_rows():
            per_q.setdefault(qid, {})[(metric, k)] = value
        for qid in sorted(per_q, key=lambda s: s.encode("utf-8")):
            vals = per_q[qid]
            for printed, metric, k in names:
                if metric in SUMMARY_ONLY:
                    continue
                lines.append(_fmt(printed, qid, vals[(metric, k)]))
    for printed, metric, k in names:
        if metric == "runid":
            lines.append(_fmt("runid", "all", runid))
        else:
            lines.append(_fmt(printed, "all", lookup_all[(metric, k)]))
    return lines


def _split_measure_lists(argv: list[str]) -> list[str]:
    """``-m a b c`` -> ``-m a -m b -m c``: after the first value of a ``-m``, the following words that
    name a measure belong to it; the first word that does not (a file name, an option) ends the list."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        out.append(word)
        i += 1
        if word == "-m" and i < len(argv):
            out.append(argv[i])
            i += 1
            while i < len(argv) and not argv[i].startswith("-") and is_measure(argv[i]):
                out += ["-m", argv[i]]
                i += 1
        elif word.startswith("-m") and len(word) > 2:  # -mP.5 (attached value)
            while i < len(argv) and not argv[i].startswith("-") and is_measure(argv[i]):
                out += ["-m", argv[i]]
                i += 1
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: parse trec_eval-style arguments, print its output lines.

    Input: ``argv`` (None = ``sys.argv[1:]``): ``[-q] [-c] [-l N] [-m MEASURE ...] [--mode M] QRELS
    RUN``. Output: the lines on stdout; the return value is the exit status: 0 on success, 2 for a
    bad measure or option (ConfigError: a usage error, with a did-you-mean for a near miss such as
    ``mapp``), 2 for an unreadable or malformed file (InputError, the message names file, line and
    field), 7 when no topic has both results and judgments. argparse exits with 2 on a usage error.
    Source: trec_eval 10.0 ``trec_eval.c``.
    """
    p = argparse.ArgumentParser(
        prog="python -m rag_eval_pipeline.trec_eval",
        description="trec_eval-compatible evaluation of a TREC run (a subset of trec_eval's measures). "
                    "Ranks as trec_eval does by default (--mode trec_eval: by score descending, ties by docno "
                    "descending; the run file's rank column is ignored).",
        epilog="Measures: trec_eval's syntax (-m P.5,10 -m ndcg_cut.10 -m ndcg), the printed names "
               "(-m ndcg_cut_10 recall_100: several after one -m) or readable aliases (ndcg@10, mrr). "
               "Exit status: 0 ok, 2 unknown measure, bad option, unreadable or malformed file or other usage "
               "error, 7 no topic with both results and judgments.")
    p.add_argument("-q", action="store_true", help="also print per-topic values")
    p.add_argument("-c", action="store_true", help="average over every qrels topic; missing ones score 0")
    p.add_argument("-l", type=int, default=1, metavar="N", help="minimum grade counted relevant (default 1)")
    p.add_argument("-m", action="append", metavar="MEASURE",
                   help="measure[.cutoffs], a printed name such as ndcg_cut_10, or a nickname "
                        "(official, all_trec); repeatable, several after one -m (default: official)")
    p.add_argument("--mode", choices=RANKING_MODES, default="trec_eval",
                   help="ranking mode (default: trec_eval): trec_eval orders by score, ties by docno "
                        "descending; system orders by the rank column")
    p.add_argument("qrels")
    p.add_argument("run")
    argv = _split_measure_lists(list(sys.argv[1:] if argv is None else argv))
    args = p.parse_args(argv)
    try:
        _, left_out = select_measures(args.m)
        if left_out:
            print(f"note: not implemented here, left out: {', '.join(left_out)}", file=sys.stderr)
        lines = evaluate(args.qrels, args.run, query_flag=args.q, complete=args.c, rel_level=args.l,
                         measures=args.m, mode=args.mode)
    except ConfigError as exc:  # an unknown measure or bad option: a usage error, as argparse's own
        print(f"trec_eval: {exc}", file=sys.stderr)
        return 2
    except InputError as exc:
        print(f"trec_eval: {exc}", file=sys.stderr)
        return 2
    except EvalError as exc:
        print(f"trec_eval: {exc}", file=sys.stderr)
        return 7
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
