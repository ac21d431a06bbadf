"""Folder-of-documents reader (core/sources/documents.py): valid input and every hostile case."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from rag_eval_pipeline.core.corpus import DOCUMENTS_SCHEMA
from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.sources.documents import load_documents_dir

FM = "---\ntitle: Devoluciones\ndoc_type: policy\nlanguage: es\n---\n"


def write(folder: Path, name: str, content: str | bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def load_error(folder: Path) -> InputError:
    with pytest.raises(InputError) as exc:
        load_documents_dir(folder)
    return exc.value


def assert_names(err: InputError, file: Path, line: int | None, field: str) -> None:
    msg = str(err)
    assert err.path == str(file) and str(file) in msg
    assert err.field == field and repr(field) in msg
    if line is not None:
        assert err.line == line and f"line {line}" in msg
    assert "expected" in msg


def test_reads_front_matter_and_body(tmp_path):
    folder = tmp_path / "corpus"
    write(folder, "devol.md", "---\ntitle: Devoluciones\ndoc_type: policy\nlanguage: es\nstatus: active\n"
                              "acl: [support-staff, agents]\nvalid_from: 2025-03-01\nvalid_to: '2026-01-31'\n---\n"
                              "Uno.\n\nDos.\n")
    write(folder, "plain.txt", "Sin cabecera.\n")
    df = load_documents_dir(folder)
    assert df.schema == DOCUMENTS_SCHEMA
    assert df["doc_id"].to_list() == ["devol", "plain"]
    row = df.row(0, named=True)
    assert row["title"] == "Devoluciones" and row["doc_type"] == "policy" and row["language"] == "es"
    assert row["acl"] == ["agents", "support-staff"]
    assert row["valid_from"] == dt.date(2025, 3, 1) and row["valid_to"] == dt.date(2026, 1, 31)
    assert row["text"] == "Uno.\n\nDos." and row["source"] == "corpus/devol.md"
    plain = df.row(1, named=True)
    assert plain["title"] == "plain" and plain["status"] == "active" and plain["acl"] == []
    assert plain["doc_type"] is None and plain["valid_from"] is None


def test_bom_and_crlf_are_repaired_silently(tmp_path):
    a = tmp_path / "a"
    b = tmp_path / "b"
    write(a, "x.md", FM + "Uno.\n\nDos.\n")
    write(b, "x.md", b"\xef\xbb\xbf" + (FM + "Uno.\n\nDos.\n").replace("\n", "\r\n").encode())
    assert load_documents_dir(a).drop("source").equals(load_documents_dir(b).drop("source"))


def test_hidden_and_underscore_files_are_ignored(tmp_path):
    folder = tmp_path / "c"
    write(folder, "x.md", "Texto.")
    write(folder, ".DS_Store", b"\x00\x01")
    write(folder, "_notas.pdf", b"%PDF")
    (folder / "_borradores").mkdir()
    assert load_documents_dir(folder)["doc_id"].to_list() == ["x"]


def test_not_utf8_names_the_byte_offset(tmp_path):
    f = write(tmp_path / "c", "latin.md", "Línea uno\n".encode() + "año".encode("latin-1"))
    err = load_error(tmp_path / "c")
    assert_names(err, f, 2, "encoding")
    assert "byte offset 12" in str(err) and "UTF-8" in str(err)


def test_binary_file_is_rejected(tmp_path):
    f = write(tmp_path / "c", "img.md", b"ab\ncd\x00ef")
    err = load_error(tmp_path / "c")
    assert_names(err, f, 2, "encoding")
    assert "NUL byte at byte offset 5" in str(err)


def test_duplicate_doc_ids_across_extensions(tmp_path):
    write(tmp_path / "c", "a.md", "Uno.")
    f = write(tmp_path / "c", "a.txt", "Otro.")
    err = load_error(tmp_path / "c")
    assert_names(err, f, None, "doc_id")
    assert "a.md" in str(err)


def test_other_extension_is_an_error(tmp_path):
    write(tmp_path / "c", "a.md", "Uno.")
    f = write(tmp_path / "c", "manual.pdf", b"%PDF-1.4")
    err = load_error(tmp_path / "c")
    assert_names(err, f, None, "file")
    assert ".pdf" in str(err)


def test_subfolder_is_an_error(tmp_path):
    write(tmp_path / "c", "a.md", "Uno.")
    (tmp_path / "c" / "mas").mkdir()
    err = load_error(tmp_path / "c")
    assert err.field == "file" and "mas" in str(err)


def test_unclosed_front_matter(tmp_path):
    f = write(tmp_path / "c", "a.md", "---\ntitle: x\nTexto sin cierre.\n")
    assert_names(load_error(tmp_path / "c"), f, 1, "front_matter")


def test_front_matter_not_yaml(tmp_path):
    f = write(tmp_path / "c", "a.md", "---\ntitle: x\nacl: [a, b\n---\nTexto.\n")
    err = load_error(tmp_path / "c")
    assert err.path == str(f) and err.field == "front_matter" and err.line in (3, 4)
    assert "YAML" in str(err)


def test_front_matter_not_a_mapping(tmp_path):
    f = write(tmp_path / "c", "a.md", "---\n- a\n- b\n---\nTexto.\n")
    assert_names(load_error(tmp_path / "c"), f, 2, "front_matter")


def test_unknown_front_matter_key(tmp_path):
    f = write(tmp_path / "c", "a.md", "---\ntitle: x\nreplacedby: b\n---\nTexto.\n")
    assert_names(load_error(tmp_path / "c"), f, 3, "replacedby")


def test_unknown_status(tmp_path):
    f = write(tmp_path / "c", "a.md", "---\ntitle: x\nstatus: archived\n---\nTexto.\n")
    err = load_error(tmp_path / "c")
    assert_names(err, f, 3, "status")
    assert "'archived'" in str(err) and "withdrawn" in str(err)


def test_replaced_without_replaced_by(tmp_path):
    f = write(tmp_path / "c", "a.md", "---\ntitle: x\nstatus: replaced\n---\nTexto.\n")
    assert_names(load_error(tmp_path / "c"), f, 3, "replaced_by")


def test_replaced_by_unknown_doc(tmp_path):
    write(tmp_path / "c", "b.md", "Nuevo.")
    f = write(tmp_path / "c", "a.md", "---\nstatus: replaced\nreplaced_by: c\n---\nViejo.\n")
    err = load_error(tmp_path / "c")
    assert_names(err, f, 3, "replaced_by")
    assert "'c'" in str(err)


def test_replaced_by_known_doc_is_accepted(tmp_path):
    write(tmp_path / "c", "b.md", "Nuevo.")
    write(tmp_path / "c", "a.md", "---\nstatus: replaced\nreplaced_by: b\n---\nViejo.\n")
    df = load_documents_dir(tmp_path / "c")
    assert df.filter(df["doc_id"] == "a")["replaced_by"].to_list() == ["b"]


def test_replaced_by_on_active_document(tmp_path):
    write(tmp_path / "c", "b.md", "Nuevo.")
    f = write(tmp_path / "c", "a.md", "---\nstatus: active\nreplaced_by: b\n---\nViejo.\n")
    assert_names(load_error(tmp_path / "c"), f, 3, "replaced_by")


def test_empty_document_after_front_matter(tmp_path):
    f = write(tmp_path / "c", "a.md", "---\ntitle: x\n---\n\n   \n")
    assert_names(load_error(tmp_path / "c"), f, 4, "text")


def test_empty_file(tmp_path):
    f = write(tmp_path / "c", "a.txt", b"")
    assert_names(load_error(tmp_path / "c"), f, 1, "text")


def test_bad_date_and_reversed_dates(tmp_path):
    f = write(tmp_path / "c", "a.md", "---\nvalid_from: 01/03/2025\n---\nTexto.\n")
    assert_names(load_error(tmp_path / "c"), f, 2, "valid_from")
    f.write_text("---\nvalid_from: 2025-03-01\nvalid_to: 2024-01-01\n---\nTexto.\n", encoding="utf-8")
    assert_names(load_error(tmp_path / "c"), f, 3, "valid_to")


def test_acl_must_be_a_list(tmp_path):
    f = write(tmp_path / "c", "a.md", "---\nacl: support-staff\n---\nTexto.\n")
    assert_names(load_error(tmp_path / "c"), f, 2, "acl")


def test_missing_and_empty_folder(tmp_path):
    with pytest.raises(InputError, match="folder not found"):
        load_documents_dir(tmp_path / "nope")
    (tmp_path / "vacia").mkdir()
    with pytest.raises(InputError, match="no .md/.txt documents"):
        load_documents_dir(tmp_path / "vacia")


def test_sample_corpus(sample_dir):
    df = load_documents_dir(sample_dir / "corpus")
    assert df.height == 14
    assert set(df["language"]) == {"es", "en"}
    replaced = df.filter(df["status"] == "replaced")
    assert replaced["doc_id"].to_list() == ["devoluciones-a1-2023"]
    assert replaced["replaced_by"].to_list() == ["devoluciones-a1"]
    assert df.filter(df["status"] == "withdrawn")["doc_id"].to_list() == ["promo-grabado-2024"]
    restricted = df.filter(df["acl"].list.len() > 0)
    assert restricted["doc_id"].to_list() == ["escalado-interno"]
    assert restricted["acl"].to_list() == [["support-staff"]]


# ------------------------------------------------------------------ special files, Unicode names, impossible dates

import os  # noqa: E402


@pytest.mark.timeout(20)  # reading a FIFO used to block forever
def test_a_named_pipe_is_refused_at_once(tmp_path):
    folder = tmp_path / "corpus"
    write(folder, "a.md", FM + "Texto.\n")
    os.mkfifo(folder / "b.md")
    err = load_error(folder)
    assert_names(err, folder / "b.md", None, "file")
    assert "a named pipe (FIFO), not a regular file" in str(err) and err.line is None


@pytest.mark.timeout(20)
def test_a_symbolic_link_loop_is_named(tmp_path):
    folder = tmp_path / "corpus"
    write(folder, "a.md", FM + "Texto.\n")
    os.symlink("loop.md", folder / "loop.md")
    err = load_error(folder)
    assert_names(err, folder / "loop.md", None, "file")
    assert "symbolic link loop" in str(err)


def test_a_dangling_link_and_a_device_are_refused(tmp_path):
    folder = tmp_path / "corpus"
    write(folder, "a.md", FM + "Texto.\n")
    os.symlink("missing.md", folder / "b.md")
    assert "dangling symbolic link" in str(load_error(folder))
    os.remove(folder / "b.md")
    os.symlink("/dev/zero", folder / "b.md")  # reading it would never end
    err = load_error(folder)
    assert "a character device, not a regular file" in str(err)


def test_a_link_to_a_regular_file_is_read(tmp_path):
    folder = tmp_path / "corpus"
    target = write(tmp_path / "elsewhere", "x.md", FM + "Texto enlazado.\n")
    write(folder, "a.md", FM + "Texto.\n")
    os.symlink(target, folder / "b.md")
    docs = load_documents_dir(folder)
    assert docs["doc_id"].to_list() == ["a", "b"] and docs["text"].to_list()[1] == "Texto enlazado."


def test_an_nfd_file_name_gives_an_nfc_doc_id(tmp_path):
    folder = tmp_path / "corpus"
    write(folder, "gui\u0301a-envi\u0301o.md", FM + "Texto.\n")
    docs = load_documents_dir(folder)
    assert docs["doc_id"].to_list() == ["gu\u00eda-env\u00edo"]
    assert docs["source"].to_list() == ["corpus/gu\u00eda-env\u00edo.md"]


def test_nfc_and_nfd_twins_of_one_name_are_one_doc_id_twice(tmp_path):
    folder = tmp_path / "corpus"
    write(folder, "gu\u00eda.md", FM + "Uno.\n")
    write(folder, "gui\u0301a.md", FM + "Dos.\n")
    err = load_error(folder)
    assert err.field == "doc_id" and err.line is None
    msg = str(err)
    assert "differ only in Unicode normalisation" in msg
    assert "U+0067 U+0075 U+00ED U+0061" in msg and "U+0067 U+0075 U+0069 U+0301 U+0061" in msg


def test_replaced_by_in_nfd_points_at_the_nfc_doc_id(tmp_path):
    folder = tmp_path / "corpus"
    write(folder, "gu\u00eda.md", FM + "Nueva.\n")
    write(folder, "vieja.md", "---\nstatus: replaced\nreplaced_by: gui\u0301a\n---\nVieja.\n")
    docs = load_documents_dir(folder)
    assert docs.filter(docs["doc_id"] == "vieja")["replaced_by"].to_list() == ["gu\u00eda"]


@pytest.mark.parametrize("line, reason", [("valid_from: 2025-02-30", "day is out of range for month"),
                                          ("valid_to: 2025-13-01", "month must be in 1..12")])
def test_an_impossible_front_matter_date_names_file_line_and_key(tmp_path, line, reason):
    folder = tmp_path / "corpus"
    f = write(folder, "a.md", "---\ntitle: T\nlanguage: es\n" + line + "\n---\nTexto.\n")
    err = load_error(folder)
    assert_names(err, f, 4, line.split(":")[0])
    assert reason in str(err) and "YYYY-MM-DD" in str(err)
