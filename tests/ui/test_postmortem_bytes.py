"""The console's postmortem form keeps the team's bytes and names a same-id race (issue 22
items 3 and 14), in one session: a teammate saves the id the form suggested, the form's save
is refused saying that id now exists (not "someone else edited it"); with a new id it saves
into the CRLF file (with a byte-order mark) adding only its block, in CRLF."""

from __future__ import annotations

import codecs
from pathlib import Path

from textual.widgets import Input

from console.ui.screens.postmortem import PostmortemScreen
from store.loader import load_incidents
from store.models import Incident
from store.writer import file_sha256, incident_block, save_incident, save_lock
from tests.ui.driving import type_text
from tests.ui.test_postmortem import (
    fill_disk_postmortem,
    incidents,  # noqa: F401  (the fixture)
    make_app,
    settle,
    text_of,
)

SIZE = (120, 40)


async def test_a_same_id_race_is_named_and_the_crlf_file_gets_only_the_new_block(
        tmp_path: Path, incidents: Path) -> None:  # noqa: F811
    # The same incidents (the index stays fresh), as a Windows checkout holds them.
    incidents.write_bytes(codecs.BOM_UTF8 + incidents.read_bytes().replace(b"\n", b"\r\n"))
    app = make_app(tmp_path, incidents)
    async with app.run_test(size=SIZE) as pilot:
        await fill_disk_postmortem(pilot, app)
        own_id = app.screen.query_one("#pm-id", Input).value
        # A teammate's console suggested the same next id and saved first.
        theirs = Incident.model_validate({
            "id": own_id, "service": "airship-api", "symptoms": "mooring lines snapped",
            "actions": []})
        before = incidents.read_bytes()
        with save_lock(incidents):
            save_incident(incidents, theirs, file_sha256(incidents))
        after_theirs = incidents.read_bytes()
        assert after_theirs == before + b"\r\n" + incident_block(theirs).replace(
            "\n", "\r\n").encode()

        await pilot.press("ctrl+s")
        await settle(pilot, app)

        assert isinstance(app.screen, PostmortemScreen)
        problems = text_of(app, "#pm-problems")
        assert f"Not saved — {own_id} was just added by another save" in problems
        assert f"{own_id} now exists in {incidents}:" in problems
        assert ("press ctrl+l to reload the memory (your form is kept), then give yours a new "
                "id") in problems
        assert "someone else edited it" not in problems
        assert incidents.read_bytes() == after_theirs

        await pilot.press("ctrl+l")
        await settle(pilot, app)
        field = app.screen.query_one("#pm-id", Input)
        field.focus()
        await pilot.press("end", *["backspace"] * len(own_id))
        await type_text(pilot, "INC-7001")
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert not isinstance(app.screen, PostmortemScreen), text_of(app, "#pm-problems")

    saved = load_incidents(incidents).incidents[-1]
    assert (saved.id, saved.symptoms) == ("INC-7001", "orders-db volume full, writes rejected")
    assert incidents.read_bytes() == (after_theirs + b"\r\n"
                                      + incident_block(saved).replace("\n", "\r\n").encode())
