"""A YAML alias bomb is refused before anything expands it (it once took ~200 s and ~9 GB)."""

from __future__ import annotations

from pathlib import Path

import pytest

from store.loader import IncidentFileError, load_incidents

BOMB = """\
- id: INC-1
  service: a
  symptoms: x
  tags: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
  title: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
  root_cause: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
  severity: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
  kind: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
  actions: [*e,*e,*e,*e,*e,*e,*e,*e,*e]
"""


@pytest.mark.parametrize("text", [
    BOMB,
    "- &x {id: INC-1, service: a, symptoms: b}\n- *x\n",
    "- id: INC-1\n  service: &s api\n  symptoms: *s\n",
], ids=["billion-laughs", "whole-incident", "one-scalar"])
def test_any_alias_is_refused_with_its_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "incidents.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(IncidentFileError) as caught:
        load_incidents(path)
    [problem] = caught.value.problems
    assert "aliases" in problem.message and problem.file == str(path)
    assert problem.line is not None and 1 <= problem.line <= text.count("\n")


def test_anchors_without_aliases_still_load(tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    path.write_text("- id: INC-1\n  service: &s api\n  symptoms: disk full\n", encoding="utf-8")
    assert [i.service for i in load_incidents(path).incidents] == ["api"]
