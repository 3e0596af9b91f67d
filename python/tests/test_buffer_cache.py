"""Results and scratch memory reused through qdq's buffer cache (qdq.set_buffer_cache): a reused
block never backs two live arrays, and values never change after the call that wrote them."""
import gc

import numpy as np
import pytest

import qdq
from conftest import assert_bit_exact

N = 1 << 19  # float32 results of 2 MiB: above the 1 MiB from which blocks are kept


def cache_limit(limit):
    """Sets the cache limit, returning the one to restore (tests must not leak process state)."""
    return qdq.set_buffer_cache(limit)


def cases():
    """The calls under test, on the same data every time."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((N // 64, 64)) * 3).astype(np.float32)
    s = (np.abs(x).reshape(N // 64, 2, 32).max(axis=2) / 7).astype(np.float32)
    y4 = qdq.quantize_linear(x, s, output_dtype="int4", axis=1, block_size=32)
    return [
        lambda: qdq.dequantize_linear(y4, s, axis=1, block_size=32),  # float32 result, packed scratch
        lambda: qdq.quantize_linear(x, s, output_dtype="int4", axis=1, block_size=32),
        lambda: qdq.quantize_linear(x, s, output_dtype="uint4", axis=1, block_size=32, packed=True).data,
        lambda: qdq.quantize_linear(x, np.float32(0.05), np.int8(0)),
        lambda: qdq.dynamic_quantize_linear(x)[0],
    ]


def test_live_results_never_share_a_block_and_keep_their_values():
    old = cache_limit(0)
    try:
        fresh = [f() for f in cases()]  # the reference, from memory the cache never held
    finally:
        cache_limit(old)
    calls = cases()
    for _ in range(3):
        live = []
        for k, f in enumerate(calls):
            a = f()
            live.append(a)
            b = f()  # while a is alive: must be another block
            assert not np.shares_memory(a, b)
            del b  # back to the cache, for the next call to take
            gc.collect()
        for k, a in enumerate(live):
            assert_bit_exact(a, fresh[k], f"case {k}")
        del live, a
        gc.collect()


def test_a_view_keeps_its_block_after_the_array_is_gone():
    f = cases()[0]
    y = f()
    want = y[100:200].copy()
    view = y[100:200]
    del y
    gc.collect()
    others = [f() for _ in range(4)]  # would reuse the block if the view did not hold it
    assert all(not np.shares_memory(view, o) for o in others)
    assert_bit_exact(view, want)


def test_results_are_writeable_c_contiguous_arrays():
    for f in cases():
        a = f()
        assert a.flags.c_contiguous and a.flags.writeable
        a.view(np.uint8).reshape(-1)[:1] = 0  # writing does not fail


def test_set_buffer_cache_returns_the_old_limit_and_zero_empties_the_cache():
    old = cache_limit(1 << 28)
    try:
        f = cases()[0]
        a = f()
        del a
        gc.collect()
        assert qdq._qdq.buffer_cache_bytes() >= 2 * N
        assert cache_limit(0) == 1 << 28
        assert qdq._qdq.buffer_cache_bytes() == 0
        a = f()
        del a
        gc.collect()
        assert qdq._qdq.buffer_cache_bytes() == 0  # nothing kept at limit 0
    finally:
        cache_limit(old)
    with pytest.raises(ValueError, match=">= 0"):
        qdq.set_buffer_cache(-1)
    with pytest.raises(TypeError, match="int"):
        qdq.set_buffer_cache(1.5)


def test_a_full_cache_makes_room_for_the_block_given_back_last():
    # A loop over a new size must not fault in a fresh block every call because older blocks of
    # other sizes fill the cache: the one given back last is kept, the oldest freed for it.
    small = 2 << 20  # float32 results of N elements: exactly one 2 MiB block each
    large = 8 << 20
    old = cache_limit(0)
    try:
        cache_limit(64 << 20)
        held = [qdq.dequantize_linear(np.zeros(N, np.int8), np.float32(1)) for _ in range(8)]
        del held
        gc.collect()
        full = qdq._qdq.buffer_cache_bytes()
        assert full == 8 * small  # the eight blocks the cache keeps at most
        y = qdq.dequantize_linear(np.zeros(4 * N, np.int8), np.float32(1))  # fits no kept block
        del y
        gc.collect()
        assert qdq._qdq.buffer_cache_bytes() == full - small + large
        cache_limit(10 << 20)  # room for the large block and one small one
        assert qdq._qdq.buffer_cache_bytes() <= 10 << 20
        y = qdq.dequantize_linear(np.zeros(4 * N, np.int8), np.float32(1))  # takes the large block
        del y
        gc.collect()
        assert qdq._qdq.buffer_cache_bytes() >= large
        cache_limit(large - 1)  # smaller than the large block: it is not kept, nor does it evict others
        kept = qdq._qdq.buffer_cache_bytes()
        y = qdq.dequantize_linear(np.zeros(4 * N, np.int8), np.float32(1))
        del y
        gc.collect()
        assert qdq._qdq.buffer_cache_bytes() == kept
    finally:
        cache_limit(old)
