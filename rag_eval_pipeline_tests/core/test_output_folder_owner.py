"""The message when a suite is given another suite's output folder never prints ``None``."""

import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.suites import OWNER_FILE, claim_output_folder


def test_a_folder_claimed_without_a_configuration_file_says_so_not_none(tmp_path):
    # the sample suite is claimed from the suites file with no configuration path: the record holds config null
    claim_output_folder(tmp_path, "sample")
    with pytest.raises(ConfigError) as exc:
        claim_output_folder(tmp_path, "other", tmp_path / "other.yaml")
    text = str(exc.value)
    assert "None" not in text
    assert text == (f"output folder {tmp_path} belongs to suite 'sample' (recorded in {tmp_path / OWNER_FILE}, no "
                    f"configuration file recorded), not to 'other' ({tmp_path / 'other.yaml'}); give this suite its "
                    "own --output")
    with pytest.raises(ConfigError) as exc:  # neither side has a configuration file
        claim_output_folder(tmp_path, "other")
    assert "None" not in str(exc.value) and "not to 'other'; give this suite its own --output" in str(exc.value)


def test_a_recorded_configuration_file_is_named(tmp_path):
    claim_output_folder(tmp_path, "adhoc_a", tmp_path / "a.yaml")
    with pytest.raises(ConfigError, match=r"\(recorded in .*, configuration .*a\.yaml\), not to 'adhoc_b'"):
        claim_output_folder(tmp_path, "adhoc_b", tmp_path / "b.yaml")
