"""What each label means, shown beside the keys on the labelling page: one *verdict family* per kind of item.

A :class:`VerdictFamily` names the question a labeller answers and defines every label of it. The page picks
the family of the session's calibration level (:func:`family_for`) and renders its definitions next to the
label keys, always visible. Four families exist today:

- ``response`` (one label per answer): *attributable* / *not_attributable*, after AIS, "Attributable to
  Identified Sources" (H. Rashkin et al., "Measuring Attribution in Natural Language Generation Models",
  Computational Linguistics 49(4), 2023) and BEGIN's "fully attributable" (N. Dziri et al., TACL 2022);
- ``claim`` (one label per claim of an answer): SUPPORTED / CONTRADICTED / NOT_MENTIONED, the judge's
  verdicts (FEVER's SUPPORTS / REFUTES / NOT ENOUGH INFO, J. Thorne et al., NAACL 2018);
- ``citation_support`` (one label per claim, against its cited chunks alone) and ``nugget_coverage`` (one
  label per reference nugget, against the answer): SUPPORTED / PARTIAL / NOT_SUPPORTED (``rag-eval label
  --family``).

The hook for more verdict families (citation support: does the cited passage support the sentence that
cites it, ALCE, T. Gao et al., EMNLP 2023; nugget coverage: is a reference nugget in the answer, TREC RAG
2024): call :func:`register` with a new family whose ``level`` is the calibration level that labels those
items, and the page shows its question, labels and definitions with no other change. A label the family
does not define is shown with "no definition given" rather than guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rag_eval_pipeline.core.registry import Registry


@dataclass(frozen=True)
class VerdictFamily:
    """One kind of human verdict: ``level`` (the calibration level whose items it labels), ``title`` (the
    panel's heading), ``question`` (what the labeller decides, one sentence), ``definitions`` (calibrated
    label -> its definition), ``looks_at`` (what to read on the page), ``source`` (the public definition)."""

    level: str
    title: str
    question: str
    definitions: Mapping[str, str]
    looks_at: str
    source: str

    def definition(self, label: str) -> str:
        """The definition of ``label``, or "no definition given for this label" (never a guess)."""
        return self.definitions.get(label, "no definition given for this label")


#: Calibration level -> its verdict family (the project's generic registry: one family per level).
FAMILIES: Registry[VerdictFamily] = Registry("verdict family")


def register(family: VerdictFamily) -> VerdictFamily:
    """Add ``family`` under its level and return it. Raises RegistryError when the level has a family already
    (a second one would silently replace the definitions labellers read)."""
    return FAMILIES.register(family, family.level)


def family_for(level: str) -> VerdictFamily | None:
    """The verdict family of a calibration level, or None when none is registered."""
    return FAMILIES.get(level) if level in FAMILIES else None


ATTRIBUTABLE = ("Attributable: every statement the answer makes can be read in the retrieved chunks shown on "
                "this page (\"according to these chunks, ...\" is true of all of it). Judge only against the "
                "chunks, not against what you know to be true; a correct answer that the chunks do not back is "
                "not attributable.")
NOT_ATTRIBUTABLE = ("Not attributable: at least one statement of the answer is not supported by the chunks: "
                    "missing from them, going beyond them, or contradicting them. An abstention that the chunks "
                    "could have answered is also not attributable.")

register(VerdictFamily(
    level="response",
    title="Is the answer attributable to the retrieved chunks?",
    question="Read the answer, then the chunks; decide whether everything the answer says is backed by them.",
    definitions={"attributable": ATTRIBUTABLE, "not_attributable": NOT_ATTRIBUTABLE},
    looks_at="the answer and the retrieved chunks (rank order); not the outside world",
    source="AIS: Rashkin et al., Computational Linguistics 2023; BEGIN: Dziri et al., TACL 2022",
))

register(VerdictFamily(
    level="claim",
    title="Is the claim supported by the retrieved chunks?",
    question="Read the highlighted claim, then the chunks; select the supporting sentence as the quote for "
             "SUPPORTED.",
    definitions={
        "SUPPORTED": "SUPPORTED: a retrieved chunk states the claim (select that sentence: it becomes the quote).",
        "CONTRADICTED": "CONTRADICTED: a retrieved chunk states the opposite of the claim.",
        "NOT_MENTIONED": "NOT_MENTIONED: the chunks neither state nor contradict the claim (even if it is true).",
    },
    looks_at="the claim and the retrieved chunks; not the rest of the answer, not the outside world",
    source="FEVER: Thorne et al., NAACL 2018; Ragas faithfulness (claim by claim)",
))

register(VerdictFamily(
    level="citation_support",
    title="Do the cited chunks, alone, support the claim?",
    question="Read the highlighted claim, then only the chunks it cites; select the words that support it as "
             "the quote for SUPPORTED or PARTIAL.",
    definitions={
        "SUPPORTED": "Full support: everything the claim says can be read in the cited chunks (\"according to "
                     "these chunks, ...\" is true of all of it).",
        "PARTIAL": "Partial support: some of what the claim says is in the cited chunks, some is missing from them.",
        "NOT_SUPPORTED": "No support: the cited chunks say none of it, or say something else (a citation to the "
                         "wrong chunk), or contradict it.",
    },
    looks_at="the claim and the chunks it cites; not the other retrieved chunks, not the outside world",
    source="the TREC 2024 RAG support evaluation (full / partial / no support; Thakur et al., arXiv 2504.15205) "
           "and ALCE's citation checks (Gao et al., EMNLP 2023)",
))

register(VerdictFamily(
    level="nugget_coverage",
    title="Does the answer state this nugget?",
    question="Read the highlighted nugget (a fact of the reviewed reference answer), then the answer; select the "
             "words of the answer that state it as the quote for SUPPORTED or PARTIAL.",
    definitions={
        "SUPPORTED": "Support: the answer states the whole nugget, in any words or language.",
        "PARTIAL": "Partial support: the answer states part of the nugget (for example the period, not when it "
                   "starts).",
        "NOT_SUPPORTED": "Not supported: the answer does not state it, or says something that contradicts it: the "
                         "nugget is left out.",
    },
    looks_at="the nugget and the answer; not the chunks, not whether the nugget is true",
    source="TREC 2024 RAG AutoNuggetizer (support / partial_support / not_support; Pradeep et al., arXiv 2411.09607)",
))
