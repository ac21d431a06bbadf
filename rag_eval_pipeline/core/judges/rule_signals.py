"""The embedded judge's encoder phases: where the semantic score and the word-level signal of extra
words are needed, and one encoder batch per phase for every text of every answer in a batch.

A mixin of :class:`~rag_eval_pipeline.core.judges.rule_based.RuleBasedJudge` (which provides
``params``, ``semantic`` and ``encoder``); the decision rule itself is in
:mod:`~rag_eval_pipeline.core.judges.evidence`. Texts are encoded once each (the encoder caches
embeddings across claims and answers) and only where the rule's verdict can still change
(:func:`~rag_eval_pipeline.core.judges.evidence.needs_semantic`,
:func:`~rag_eval_pipeline.core.judges.evidence.needs_counterparts`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_eval_pipeline.core.judges.evidence import (
    UNIT_TOKENS,
    aligned_candidates,
    decide,
    needs_counterparts,
    needs_semantic,
    with_counterpart,
    with_semantic,
)
from rag_eval_pipeline.core.judges.tokens import aligned_span, stem_sequence, stem_surfaces, tokens

if TYPE_CHECKING:
    from rag_eval_pipeline.core.judges.rule_based import _Prepared

    #: A counterpart job: (answer, claim, sentence, [(extra word, candidate words)], best similarity per
    #: extra word, None until scored).
    _Job = tuple[_Prepared, int, int, list[tuple[str, list[str]]], list[float | None]]


class EncoderSignals:
    """Fills :class:`~rag_eval_pipeline.core.judges.evidence.Evidence` rows with encoder signals."""

    params: dict
    semantic: bool
    # the judge's rules on claim text, given by the judge class (rule_based.py): this mixin does not import it
    fixed_reason: Callable[[str], str | None]
    matching_text: Callable[[str], str]

    if TYPE_CHECKING:
        @property
        def encoder(self) -> Any:  # RuleBasedJudge's: an object with ``encode`` or ``similarity``
            ...

    def _resolve(self, preps: list[_Prepared]) -> None:
        """Fill the encoder signals where they can change a verdict, in two rounds of one encoder
        batch each: first only each undecided claim's best sentence by words (most claims are
        settled there: SUPPORTED), then every remaining candidate of the claims still undecided.
        A claim already SUPPORTED on words, or fixed (question, first person), needs no encoder.
        The verdicts equal those of filling every candidate at once (a quote may differ only
        between sentences with the same word recall)."""
        if not self.semantic or not preps:
            return
        p_ = self.params
        open_claims = [(p, i) for p in preps for i, c in enumerate(p.claims)
                       if not self.fixed_reason(c) and not any(decide(ev, p_) == "SUPPORTED" for ev in p.rows[i])]
        for first_only in (True, False):
            pairs: list[tuple[_Prepared, int, int]] = []
            for p, i in open_claims:
                row = p.rows[i]
                cands = sorted((j for j, ev in enumerate(row)
                                if needs_semantic(ev, p_) or needs_counterparts(ev, p_)),
                               key=lambda j: (-row[j].lexical, j))
                pairs.extend((p, i, j) for j in (cands[:1] if first_only else cands))
            if not pairs:
                return
            # the cheap signal first: single words; a pair whose extra words stay unexcused cannot be
            # SUPPORTED whatever its semantic score, so its sentence need not be encoded at all
            self._fill_counterpart_pairs([t for t in pairs if _extra_open(t[0].rows[t[1]][t[2]])])
            self._fill_semantic_pairs([t for t in pairs if needs_semantic(t[0].rows[t[1]][t[2]], p_)])
            self._fill_counterpart_pairs([t for t in pairs if needs_counterparts(t[0].rows[t[1]][t[2]], p_)])
            open_claims = [(p, i) for p, i in open_claims
                           if not any(decide(ev, p_) == "SUPPORTED" for ev in p.rows[i])]

    def _fill_semantic(self, preps: list[_Prepared], everywhere: bool = False) -> None:
        """The semantic score on every pair where it can change a verdict (or everywhere)."""
        if not self.semantic:
            return
        self._fill_semantic_pairs([(p, i, j) for p in preps for i, row in enumerate(p.rows)
                                   for j, ev in enumerate(row) if everywhere or needs_semantic(ev, self.params)])

    def _fill_semantic_pairs(self, need: list[tuple[_Prepared, int, int]]) -> None:
        """Semantic scores of the (prepared answer, claim, sentence) pairs ``need``: one encoder
        batch for their claims (query side) and one for their sentences (passage side)."""
        need = [t for t in need if t[0].rows[t[1]][t[2]].semantic is None]
        if not self.semantic or not need:
            return
        margin = int(self.params.get("semantic_span", -1))
        # across languages few words are shared to locate the claim by: the whole sentence
        passage = [aligned_span(p.sentences[j].text, self.matching_text(p.claims[i]), p.sentences[j].tokens.language,
                                -1 if p.rows[i][j].cross_lingual else margin) for p, i, j in need]
        claim_texts = list(dict.fromkeys(p.claims[i] for p, i, _ in need))
        sent_texts = list(dict.fromkeys(passage))
        qv, sv = self._vectors(claim_texts, sent_texts)
        ci = {t: k for k, t in enumerate(claim_texts)}
        si = {t: k for k, t in enumerate(sent_texts)}
        sims = np.einsum("ij,ij->i", qv[[ci[p.claims[i]] for p, i, _ in need]], sv[[si[t] for t in passage]])
        for (p, i, j), sim in zip(need, sims):
            p.rows[i][j] = with_semantic(p.rows[i][j], float(sim))

    def _fill_counterparts(self, preps: list[_Prepared], everywhere: bool = False) -> None:
        """The word-level signal of the extra words on every pair where it can change a verdict (or,
        ``everywhere``, on every pair that has extra words)."""
        if not self.semantic:
            return
        self._fill_counterpart_pairs([
            (p, i, j) for p in preps for i, row in enumerate(p.rows) for j, ev in enumerate(row)
            if ev.extra and not ev.extra_strict and (everywhere or needs_counterparts(ev, self.params))],
            lazy=not everywhere)

    def _fill_counterpart_pairs(self, need: list[tuple[_Prepared, int, int]], lazy: bool = True) -> None:
        """Word-level entailment signal of the extra words of the pairs ``need``: for each extra
        word, its best cosine with the sentence words it may substitute for
        (:func:`~rag_eval_pipeline.core.judges.evidence.aligned_candidates`; single-word embeddings,
        passage side), each word encoded once (cached across claims and answers).

        ``lazy`` (the judge's own path): a pair is SUPPORTED only when every extra word is excused,
        so words are encoded in rounds, one extra word of every pair still open per round (one
        encoder batch each), and a pair stops at its first extra word that is not excused, or
        without any encoding when an extra word has no candidate at all; the scores left
        uncomputed are NaN (counted as not excused). ``lazy=False`` (the fitting script, whose
        threshold varies) scores every extra word."""
        width = int(self.params.get("counterpart_window", 0))
        tau = float(self.params.get("word_counterpart", 1.01))
        jobs: list[_Job] = []
        for p, i, j in need:
            ev = p.rows[i][j]
            if not ev.extra or ev.extra_strict or ev.counterpart is not None:
                continue
            s = p.sentences[j]
            lang = s.tokens.language
            text = self.matching_text(p.claims[i])
            csurf, ssurf = stem_surfaces(text, lang), stem_surfaces(s.text, lang)
            allowed = s.tokens.words - tokens(text, lang).words - UNIT_TOKENS
            cseq, sseq = stem_sequence(text, lang), stem_sequence(s.text, lang)
            per = [(csurf.get(m, m), [ssurf.get(u, u) for u in aligned_candidates(m, cseq, sseq, allowed, width)])
                   for m in ev.extra]
            jobs.append((p, i, j, per, [None] * len(per)))
        if not self.semantic or not jobs:
            return
        for *_, per, best in jobs:  # no candidate: nothing to substitute, below any threshold
            for k, (_, cands) in enumerate(per):
                if not cands:
                    best[k] = -2.0
        live = [job for job in jobs if not (lazy and any(b == -2.0 for b in job[4]))]
        while live:
            todo: list[tuple[_Job, int]] = []  # (job, extra index) to score in this round
            for job in live:
                ks = [k for k, b in enumerate(job[4]) if b is None]
                todo.extend((job, k) for k in (ks[:1] if lazy else ks))
            if not todo:
                break
            vocab = list(dict.fromkeys(w for job, k in todo for w in (job[3][k][0], *job[3][k][1])))
            _, wv = self._vectors([], vocab)
            wi = {w: n for n, w in enumerate(vocab)}
            for job, k in todo:
                m, cands = job[3][k]
                job[4][k] = float((wv[[wi[w] for w in cands]] @ wv[wi[m]]).max())
            live = [job for job in live if any(b is None for b in job[4])
                    and not (lazy and any(b is not None and b < tau for b in job[4]))]
        for p, i, j, _, best in jobs:
            p.rows[i][j] = with_counterpart(p.rows[i][j], tuple(float("nan") if b is None else b for b in best))

    def _vectors(self, queries: list[str], passages: list[str]):
        """(query embeddings, passage embeddings) as row-normalised float arrays. An encoder without
        ``encode`` (only ``similarity``) is asked for similarities against an identity basis."""
        enc = self.encoder
        if hasattr(enc, "encode"):
            qv = enc.encode(queries, query=True) if queries else np.zeros((0, 1), dtype=np.float32)
            pv = enc.encode(passages, query=False) if passages else np.zeros((0, 1), dtype=np.float32)
            return qv, pv
        # a minimal encoder: similarities of every query with every passage, returned as "vectors"
        # whose dot products reproduce them (queries one-hot, passages their similarity columns)
        if not queries:
            sim = enc.similarity(passages, passages)
            return np.zeros((0, len(passages))), np.asarray(sim, dtype=np.float64)
        sim = np.asarray(enc.similarity(queries, passages), dtype=np.float64)
        return np.eye(len(queries)), sim.T



def _extra_open(ev) -> bool:
    return bool(ev.extra) and not ev.extra_strict and ev.counterpart is None
