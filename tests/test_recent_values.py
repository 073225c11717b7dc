"""Oracle values kept at their last few points (utilities/recent.py): the same point asked again costs no pass over
the rows, callers get copies, the least recently used point goes first, and what else the values depend on (a
constraint's bound, which the true-rate continuation tightens) is part of the key."""
import numpy as np

from fairmodel.data.passes import passes_of
from fairmodel.utilities.recent import Recent

from tests.test_ramp_rates import make_data, program_of


def test_a_kept_value_is_a_copy_and_the_least_recent_point_goes_first():
    calls = []

    def fn(x):
        calls.append(float(x[0]))
        return {"x": np.array(x, dtype=float)}
    kept = Recent(fn, 2)
    first = kept(np.array([1.0]))
    first["x"][0] = 99.0                                   # the caller's copy
    assert kept(np.array([1.0]))["x"][0] == 1.0 and calls == [1.0]
    kept(np.array([2.0]))
    kept(np.array([1.0]))                                  # 1 is now the most recent: 2 goes when 3 comes
    kept(np.array([3.0]))
    kept(np.array([1.0]))
    assert calls == [1.0, 2.0, 3.0]
    kept(np.array([2.0]))
    assert calls == [1.0, 2.0, 3.0, 2.0]


def test_the_program_reads_the_rows_once_per_point_and_bound():
    """A ramp selection-rate gap's DC program: f_0, the f_i and their linearization at a point read the rows once;
    after the block's bound changes (the continuation on the true rates) the f_i are those of the new bound."""
    data = make_data(300, seed=1)
    prob, _ = program_of("dp", data, eps=0.05)
    program = prob.family.program
    x = program.start() + 0.1
    start = passes_of(data)
    values, f0, (at, slopes) = program.values(x), program.objective_value(x), program.linearize(x)
    read = passes_of(data) - start
    assert read >= 2
    np.testing.assert_array_equal(program.values(x), values)
    assert program.objective_value(x) == f0
    again = program.linearize(x)
    np.testing.assert_array_equal(again[0], at)
    np.testing.assert_array_equal(again[1], slopes)
    assert passes_of(data) - start == read
    block = program.blocks[0]
    block.set_bound(0.02)
    tighter = program.values(x)
    assert passes_of(data) - start > read
    assert np.all(tighter > values)
    block.set_bound(0.05)
    np.testing.assert_array_equal(program.values(x), values)
