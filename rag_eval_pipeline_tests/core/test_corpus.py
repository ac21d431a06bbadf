"""Chunking and corpus versioning (core/corpus.py)."""

from __future__ import annotations

import datetime as dt
import hashlib

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.corpus import (
    DOCUMENTS_SCHEMA,
    chunk_documents,
    chunk_text,
    corpus_version,
    normalise_text,
)
from rag_eval_pipeline.core.errors import ConfigError, InputError
from rag_eval_pipeline.core.sources.documents import load_documents_dir


def docs(*rows: dict) -> pl.DataFrame:
    base = {"title": "T", "source": "corpus/x.md", "doc_type": "policy", "language": "es", "status": "active",
            "replaced_by": None, "acl": [], "valid_from": dt.date(2025, 1, 1), "valid_to": None}
    return pl.DataFrame([{**base, **r} for r in rows], schema=DOCUMENTS_SCHEMA)


TEXT = "Primer párrafo.\n\nSegundo párrafo, algo más largo.\n  \nTercero."


def test_paragraph_chunks_ids_and_hashes():
    snap = chunk_documents(docs({"doc_id": "a", "text": TEXT}))
    assert snap.columns == list(tables.SCHEMAS["corpus_snapshot"])
    assert snap["chunk_id"].to_list() == ["a#0", "a#1", "a#2"]
    assert snap["chunk_index"].to_list() == [0, 1, 2]
    assert snap["text"].to_list() == ["Primer párrafo.", "Segundo párrafo, algo más largo.", "Tercero."]
    for text, sha in zip(snap["text"], snap["sha256"]):
        assert sha == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert snap["doc_type"].to_list() == ["policy"] * 3
    assert snap["valid_from"].to_list() == [dt.date(2025, 1, 1)] * 3


def test_crlf_and_bom_give_the_same_chunks():
    lf = chunk_documents(docs({"doc_id": "a", "text": TEXT}))
    crlf = chunk_documents(docs({"doc_id": "a", "text": "\ufeff" + TEXT.replace("\n", "\r\n")}))
    assert lf.equals(crlf)
    assert corpus_version(lf) == corpus_version(crlf)
    assert normalise_text("\ufeffa\r\nb\rc") == "a\nb\nc"


def test_long_paragraph_is_split_on_sentences():
    para = " ".join(f"Frase número {i} del párrafo largo." for i in range(40))
    pieces = chunk_text(para, "paragraphs", max_chars=120)
    assert len(pieces) > 1
    assert all(len(p) <= 120 for p in pieces)
    assert all(p.endswith(".") for p in pieces)
    assert " ".join(pieces) == para


def test_sentence_longer_than_max_chars_is_cut_at_whitespace():
    para = "palabra " * 50
    pieces = chunk_text(para.strip(), max_chars=30)
    assert all(0 < len(p) <= 30 for p in pieces)
    assert " ".join(pieces).split() == para.split()


def test_document_strategy_keeps_one_chunk_regardless_of_length():
    long = "x. " * 1000
    snap = chunk_documents(docs({"doc_id": "d", "text": long + "\n\nmore"}), strategy="document", max_chars=50)
    assert snap["chunk_id"].to_list() == ["d#0"]


def test_merge_below_joins_short_paragraphs_deterministically():
    text = "A.\n\nB.\n\nUn párrafo bastante más largo que los anteriores."
    assert chunk_text(text, merge_below=10, max_chars=1200) == [
        "A.\n\nB.\n\nUn párrafo bastante más largo que los anteriores."
    ]
    small = chunk_text(text, merge_below=10, max_chars=20)
    assert small[0] == "A.\n\nB."  # the merged pair fits; the long paragraph does not join it
    assert all(len(p) <= 20 for p in small)
    assert chunk_text(text) == ["A.", "B.", "Un párrafo bastante más largo que los anteriores."]


def test_empty_document_is_an_input_error():
    with pytest.raises(InputError) as exc:
        chunk_documents(docs({"doc_id": "vacio", "text": " \n\n \r\n", "source": "corpus/vacio.md"}))
    assert exc.value.field == "text"
    assert "corpus/vacio.md" in str(exc.value) and "'text'" in str(exc.value) and "vacio" in str(exc.value)


def test_duplicate_doc_id_and_hash_in_id_are_input_errors():
    with pytest.raises(InputError, match="appears twice"):
        chunk_documents(docs({"doc_id": "a", "text": "x"}, {"doc_id": "a", "text": "y"}))
    with pytest.raises(InputError, match="'#'"):
        chunk_documents(docs({"doc_id": "a#b", "text": "x"}))


def test_bad_strategy_and_max_chars_are_config_errors():
    with pytest.raises(ConfigError):
        chunk_documents(docs({"doc_id": "a", "text": "x"}), strategy="sentences")
    with pytest.raises(ConfigError):
        chunk_text("x", max_chars=0)


def test_version_same_input_same_version_and_ids():
    d = docs({"doc_id": "a", "text": TEXT}, {"doc_id": "b", "text": "Otro.\n\nMás."})
    s1, s2 = chunk_documents(d), chunk_documents(d.reverse())
    assert s1["chunk_id"].to_list() == s2["chunk_id"].to_list()
    assert corpus_version(s1) == corpus_version(s2) == corpus_version(s1.sample(fraction=1.0, shuffle=True, seed=3))
    assert len(corpus_version(s1)) == 64


def test_version_changes_with_text_and_with_metadata():
    base = chunk_documents(docs({"doc_id": "a", "text": TEXT}))
    edited = chunk_documents(docs({"doc_id": "a", "text": TEXT.replace("Tercero", "Tercer")}))
    assert corpus_version(base) != corpus_version(edited)
    assert base["sha256"][2] != edited["sha256"][2]
    assert base["sha256"][:2].to_list() == edited["sha256"][:2].to_list()
    restricted = chunk_documents(docs({"doc_id": "a", "text": TEXT, "acl": ["support-staff"]}))
    assert restricted["sha256"].to_list() == base["sha256"].to_list()
    assert corpus_version(restricted) != corpus_version(base)
    withdrawn = chunk_documents(docs({"doc_id": "a", "text": TEXT, "status": "withdrawn"}))
    assert corpus_version(withdrawn) != corpus_version(base)
    dated = chunk_documents(docs({"doc_id": "a", "text": TEXT, "valid_to": dt.date(2026, 1, 1)}))
    assert corpus_version(dated) != corpus_version(base)


def test_sample_corpus_chunks(sample_dir):
    snap = chunk_documents(load_documents_dir(sample_dir / "corpus"))
    assert snap["doc_id"].n_unique() == 14
    assert snap.height == 62
    assert snap["chunk_id"].n_unique() == snap.height
    assert corpus_version(snap) == corpus_version(chunk_documents(load_documents_dir(sample_dir / "corpus")))
    marker = snap.filter(pl.col("text").str.contains("ZX-INTERNAL-7731"))
    assert marker["chunk_id"].to_list() == ["escalado-interno#1"]
    assert marker["acl"].to_list() == [["support-staff"]]


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab .!?\n\r\t\ufeffñ")), max_size=400),
    max_chars=st.integers(min_value=1, max_value=60),
    merge_below=st.integers(min_value=0, max_value=30),
)
def test_chunking_keeps_every_visible_character(text, max_chars, merge_below):
    pieces = chunk_text(text, "paragraphs", max_chars=max_chars, merge_below=merge_below)
    assert all(p.strip() for p in pieces)
    assert all(len(p) <= max_chars for p in pieces)
    visible = "".join(normalise_text(text).split())
    assert "".join("".join(p.split()) for p in pieces) == visible
    assert pieces == chunk_text(text, "paragraphs", max_chars=max_chars, merge_below=merge_below)


def test_doc_ids_are_nfc_and_twins_are_duplicates_with_code_points():
    # an NFD doc_id from any source (a BEIR corpus, a frame built by hand) is stored in NFC
    snap = chunk_documents(docs({"doc_id": "gui\u0301a", "text": "Uno."}))
    assert snap["doc_id"].to_list() == ["gu\u00eda"] and snap["chunk_id"].to_list() == ["gu\u00eda#0"]
    with pytest.raises(InputError) as exc:
        chunk_documents(docs({"doc_id": "gu\u00eda", "text": "Uno."}, {"doc_id": "gui\u0301a", "text": "Dos."}))
    msg = str(exc.value)
    assert exc.value.field == "doc_id" and "appears twice" in msg
    assert "U+00ED" in msg and "U+0069 U+0301" in msg
