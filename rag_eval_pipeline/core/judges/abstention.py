"""Answers whose text abstains ("No encuentro esa información", "I don't know") although the log says
decision ``answer``.

Such an answer states no fact to judge: splitting it into claims would count it as an answer
without evidence (NOT_MENTIONED), or even CONTRADICTED when the context shares its words. It is
flagged ``abstention_text_in_answer`` instead (``core.judging.judge_runs`` makes no judge call for
it) and, by default, the decision metrics count it as an abstention.

Rule: after folding (NFKC, case folded, accents stripped, curly apostrophes straightened, runs of
whitespace as one space), the answer's **first sentence** contains one of the phrases of its
language list; lists are per language (``es``, ``en``) and every list is tried, since an answer's
language is not known. Hedges ("I'm not sure, but ...") are not abstentions: the answer goes on to
state a fact. An abstention followed by an offer ("No dispongo de esa información;
contacta con soporte") is still one; a fact followed by a hedge ("El plazo es de 30 días; no
encuentro más detalles") is not, because the first sentence states a fact.

The phrase lists come from the configuration key ``judge.abstention_phrases`` (a mapping
language → list of phrases; it replaces :data:`DEFAULT_ABSTENTION_PHRASES` as a whole, and an
empty mapping turns the detection off).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from functools import lru_cache

from rag_eval_pipeline.core.errors import ConfigError

#: Phrases, per language, that make an answer an abstention when its first sentence contains one.
DEFAULT_ABSTENTION_PHRASES: dict[str, tuple[str, ...]] = {
    "es": (
        "no encuentro", "no he encontrado", "no he podido encontrar", "no se encuentra informacion",
        "no dispongo de informacion", "no dispongo de esa informacion", "no dispongo de datos",
        "no tengo informacion", "no tengo esa informacion", "no tengo datos", "no lo se", "no se la respuesta",
        "no puedo responder", "no puedo contestar", "no puedo ayudarte con eso",
        "no puedo darte esa informacion", "no puedo darte informacion",
        "la documentacion no dice", "la documentacion no indica", "la documentacion no menciona",
        "los documentos no dicen", "los documentos no indican", "los documentos no mencionan",
        "no aparece en la documentacion", "no consta en la documentacion", "no hay informacion",
        "no se menciona", "no se indica", "no esta documentado", "no se especifica",
    ),
    "en": (
        "i don't know", "i do not know", "i cannot find",
        "i can't find", "i could not find", "i couldn't find", "i have no information",
        "i don't have information", "i do not have information", "i don't have that information",
        "i do not have that information", "i don't have enough information",
        "i do not have enough information", "i cannot answer", "i can't answer", "i am unable to answer",
        "i'm unable to answer", "the documents do not say", "the documents don't say",
        "the documents do not mention", "the documents don't mention", "the documentation does not say",
        "the documentation doesn't say", "the documentation does not mention",
        "the context does not say", "the context does not mention", "the context doesn't mention",
        "there is no information", "no information is available", "is not mentioned in the",
        "is not specified in the", "not covered in the documentation",
    ),
}

_QUOTE = str.maketrans({"’": "'", "‘": "'", "`": "'", "´": "'"})
_WS = re.compile(r"\s+")
_NON_WORD = re.compile(r"[^\w']+")
_FIRST_SENTENCE = re.compile(r"^(.+?(?:[.!?…;](?=\s|$)|$))", re.DOTALL)


def fold(text: str) -> str:
    """The folding of the module docstring: NFKC, casefold, accents stripped, quotes, spaces."""
    t = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text).casefold())
    t = "".join(c for c in t if not unicodedata.combining(c)).translate(_QUOTE)
    return _WS.sub(" ", t).strip()


def phrases_from_config(value: object, where: str = "judge.abstention_phrases") -> dict[str, tuple[str, ...]]:
    """The phrase lists of a configuration value (None → :data:`DEFAULT_ABSTENTION_PHRASES`).

    Input: None, or a mapping language code (str) → list of non-blank strings. Output: language →
    tuple of folded phrases. Raises ConfigError naming ``where`` for any other shape.
    """
    if value is None:
        return {k: tuple(fold(p) for p in v) for k, v in DEFAULT_ABSTENTION_PHRASES.items()}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must be a mapping of language -> list of phrases, got {type(value).__name__}")
    out: dict[str, tuple[str, ...]] = {}
    for lang, phrases in value.items():
        if not isinstance(lang, str) or isinstance(phrases, (str, bytes)) or not isinstance(phrases, Sequence):
            raise ConfigError(f"{where}.{lang} must be a list of phrases, got {phrases!r}")
        folded = []
        for i, p in enumerate(phrases):
            if not isinstance(p, str) or not p.strip():
                raise ConfigError(f"{where}.{lang}[{i}] must be a non-blank string, got {p!r}")
            folded.append(fold(p))
        out[lang] = tuple(folded)
    return out


def abstention_phrase(answer: str | None, phrases: Mapping[str, Sequence[str]] | None = None) -> str | None:
    """The phrase that makes ``answer`` an abstention (rule of the module docstring), or None.

    Input: the answer text (None/blank → None) and folded phrase lists as returned by
    :func:`phrases_from_config` (None → the defaults). Output: the matched phrase (folded) or None.
    Never raises.
    """
    if not answer or not answer.strip():
        return None
    if phrases is None:
        phrases = phrases_from_config(None)
    text = fold(answer).lstrip("¿¡\"'«“(- ")
    m = _FIRST_SENTENCE.match(text)
    first = m.group(1) if m else text
    padded = " " + _WS.sub(" ", _NON_WORD.sub(" ", first)).strip() + " "
    for lang in sorted(phrases):
        for p in phrases[lang]:
            pp = _padded_phrase(p)
            if pp and pp in padded:
                return p
    return None


@lru_cache(maxsize=4096)
def _padded_phrase(phrase: str) -> str:
    """`` phrase `` with non-word runs as single spaces ("" for a phrase with no word): computed once
    per phrase, not once per phrase and answer."""
    pp = _WS.sub(" ", _NON_WORD.sub(" ", phrase)).strip()
    return " " + pp + " " if pp else ""
