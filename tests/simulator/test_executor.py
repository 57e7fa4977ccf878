"""The rollout executor: results with provenance, journal, resumability."""

import json

import pytest

from expaudit.journal import read_journal
from simulator.executor import Cell, execute

pytestmark = pytest.mark.sim


@pytest.fixture(scope="module")
def world():
    from simulator.executor import ReplayWorld
    from simulator.recording import record
    from simulator.stack_scenes import query_states
    from simulator.stack_sim import StackSim

    sim = StackSim()
    rec = record(sim, 0)
    states = query_states("stack-orig")
    return ReplayWorld(experiences={"stack-e000": (rec.layout, rec.path)},
                       states={s.state_id: s.layout for s in (states[0], states[31])})


def _cells():
    return [Cell("replay", "stack-orig", "stack-e000", sid, seed)
            for sid in ("stack-orig-s00", "stack-orig-s31") for seed in (0, 1)]


def test_execute_writes_provenance_and_resumes(tmp_path, world):
    journal = tmp_path / "j.jsonl"
    cells = _cells()
    first = list(execute(cells[:2], world, lambda c: journal, workers=1))
    assert [r.cell for r in first] == cells[:2]
    # a run killed while writing leaves a torn line; it is dropped, the rest kept
    with journal.open("a") as fh:
        fh.write('{"mechanism": "replay", "query_set"')
    second = list(execute(cells, world, lambda c: journal, workers=1))
    assert [r.cell for r in second] == cells[2:]  # only the cells not yet done
    records = read_journal(journal)
    assert len(records) == 4
    rec = records[0]
    assert rec["code_version"] == "replay/1"
    assert json.loads(rec["packages"])["mujoco"]
    assert rec["state_hash"] != rec["final_hash"] and rec["wall_s"] > 0
    assert not list(execute(cells, world, lambda c: journal, workers=1))


def test_same_cell_same_outcome(world):
    from simulator.executor import run_cell
    from simulator.stack_sim import StackSim

    sim = StackSim()
    cell = _cells()[3]
    a, b = run_cell(sim, world, cell), run_cell(sim, world, cell)
    assert (a.success, a.state_hash, a.final_hash) == (b.success, b.state_hash, b.final_hash)


def test_errors_name_the_bad_value(world):
    from simulator.executor import UnsupportedMechanismError, run_cell

    with pytest.raises(UnsupportedMechanismError, match="cell mechanism 'policy'"):
        run_cell(None, world, Cell("policy", "stack-orig", "stack-e000", "stack-orig-s00", 0))
    with pytest.raises(KeyError, match="experience_id 'stack-e999' is not in the library"):
        run_cell(None, world, Cell("replay", "stack-orig", "stack-e999", "stack-orig-s00", 0))
    with pytest.raises(KeyError, match="state_id 'nope' is not in query set 'stack-orig'"):
        run_cell(None, world, Cell("replay", "stack-orig", "stack-e000", "nope", 0))
