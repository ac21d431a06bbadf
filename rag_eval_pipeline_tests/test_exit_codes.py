"""The exit-code table is the one place exit statuses are declared: every command has entries, no command
module returns a bare number, and each command's --help epilog lists exactly its statuses."""

import re
from pathlib import Path

from rag_eval_pipeline.cli import COMMANDS, build_parser
from rag_eval_pipeline.cli.exit_codes import EXIT_CODES, commands, epilog


def test_every_command_has_exit_codes_and_every_declared_command_exists():
    names = [m.NAME for m in COMMANDS]
    assert sorted(names) == sorted(commands())
    for name in names:
        assert epilog(name).startswith("exit codes:\n  0 ")  # every command can end cleanly


def test_command_modules_return_named_statuses_not_numbers():
    for module in COMMANDS:
        source = Path(module.__file__).read_text(encoding="utf-8")
        assert not re.findall(r"return\s+\d+\b|, \d\)\s*$", source, flags=re.M), module.__name__


def test_each_subparser_epilog_is_rendered_from_the_table():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, p in sub.choices.items():
        listed = re.findall(r"^  (\d+)\s", p.epilog, flags=re.M)
        assert listed == [str(e.code) for e in EXIT_CODES if name in e.meanings], name


def test_the_manual_shows_the_generated_usage_and_exit_code_table():
    from rag_eval_pipeline.cli.manual import manual_block

    page = Path(__file__).resolve().parents[1] / "docs" / "operations.md"
    assert manual_block() in page.read_text(encoding="utf-8"), (
        "docs/operations.md is out of date: python -c \"from rag_eval_pipeline.cli.manual import write_manual; "
        "write_manual('docs/operations.md')\"")
