"""An episode shorter than the 30-s "near the end" window is not "Finished" at any
position: the window is then a tenth of its length; long episodes keep 30 s."""

from __future__ import annotations

from podsync.services.episode_state import finished


def test_short_episodes_finish_near_their_end_only() -> None:
    assert not finished(0, 25)
    assert not finished(0, 30)
    assert not finished(5, 30)
    assert finished(28, 30) and finished(30, 30)
    assert not finished(10, 45) and finished(41, 45)
    # An hour: within 30 s of the end, as AntennaPod's smart mark.
    assert finished(3570, 3600) and not finished(3500, 3600)
