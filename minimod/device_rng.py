"""Uniform random numbers on a GPU that a CUDA graph can hold: a counter-based generator whose
state is two 64-bit words in device memory.

CuPy's generator keeps its position on the host and passes it to each kernel as a number, so
a captured draw would replay the same numbers every time (`backend.rng` refuses capture for
that reason). Here the kernels read the position from device memory and move it on, so every
replay, like every eager call, draws new numbers:

- the state of a GPU is `[seed, position]` (uint64), one array per device, made on the first
  draw there and kept for the life of the process (graphs hold its address);
- `uniform(xp, device_id, shape)` fills a float32 array: element i is output number
  `position + i` of SplitMix64 seeded with `seed` (Steele, Lea and Flood's generator, whose
  k-th output is a mix of seed + k * golden gamma, so it can be computed out of order), its
  top 24 bits scaled to [0, 1);
- a second kernel then moves the position on by the count drawn.

Both kernels run on the current stream, so draws stay in the order they are queued, inside a
graph or not. `reseed(seed)` rewrites every state in place (a small copy to each device), so
graphs captured before a `mx.random.seed` draw the new sequence. `host_uniform` is the same
arithmetic in NumPy, the reference the tests hold the kernels to. Dropout, the RNN op's
dropout and the uniform and normal samplers draw from it on GPUs (`backend.uniform`). The
GPU's numbers are minimod's own: MXNet's GPU generator is another, and CPU arrays keep
drawing from `backend.rng` (MXNet's numbers where those are matched).
"""
from __future__ import annotations

import numpy as np

from .cuda_graph import forbid_in_capture

__all__ = ["KERNELS", "SOURCE", "host_uniform", "reseed", "uniform"]

_GAMMA, _MIX1, _MIX2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_THREADS = 256

#: the CUDA source of the two kernels (compiled once per process by CuPy)
SOURCE = r"""
extern "C" __global__ void minimod_rng_uniform(const unsigned long long* state, float* out,
                                               long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned long long z = state[0] + (state[1] + (unsigned long long)i) * %dULL;
  z = (z ^ (z >> 30)) * %dULL;
  z = (z ^ (z >> 27)) * %dULL;
  z ^= z >> 31;
  out[i] = (float)(z >> 40) * (1.0f / 16777216.0f);
}

extern "C" __global__ void minimod_rng_advance(unsigned long long* state, long long n) {
  if (blockIdx.x == 0 && threadIdx.x == 0) state[1] += (unsigned long long)n;
}
""" % (_GAMMA, _MIX1, _MIX2)

KERNELS = ("minimod_rng_uniform", "minimod_rng_advance")

_SEED = [0]
_STATES: dict = {}    # (array module, device id) -> the state array
_MODULES: dict = {}   # array module -> (uniform kernel, advance kernel)


def host_uniform(seed: int, position: int, count: int) -> np.ndarray:
    """Numbers `position` .. `position + count - 1` of the sequence of `seed`, as the GPU
    kernel draws them (float32 in [0, 1))."""
    k = np.arange(count, dtype=np.uint64) + np.uint64(position)
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + k * np.uint64(_GAMMA)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(_MIX1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(_MIX2)
    z ^= z >> np.uint64(31)
    return (z >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / 16777216.0)


def _kernels(xp) -> tuple:
    kernels = _MODULES.get(xp)
    if kernels is None:
        module = xp.RawModule(code=SOURCE)
        kernels = _MODULES[xp] = tuple(module.get_function(name) for name in KERNELS)
    return kernels


def _state(xp, device_id: int):
    key = (xp, device_id)
    state = _STATES.get(key)
    if state is None:
        forbid_in_capture("making a GPU's random state (a host-to-device copy)")
        state = xp.zeros(2, np.uint64)
        state.set(np.array([_SEED[0], 0], np.uint64))
        _STATES[key] = state
    return state


def uniform(xp, device_id: int, shape: tuple):
    """A new float32 array of `shape` on the current GPU (`device_id`), uniform in [0, 1), the
    next numbers of that GPU's sequence; safe to capture once the GPU has drawn before."""
    out = xp.empty(shape, np.float32)
    count = int(out.size)
    if count == 0:
        return out
    draw, advance = _kernels(xp)
    state = _state(xp, device_id)
    draw(((count + _THREADS - 1) // _THREADS,), (_THREADS,), (state, out, np.int64(count)))
    advance((1,), (1,), (state, np.int64(count)))
    return out


def reseed(seed: int) -> None:
    """Start every GPU's sequence again from `seed` (`mx.random.seed`), in place."""
    _SEED[0] = int(seed) % (1 << 64)
    for (xp, device_id), state in _STATES.items():
        with xp.cuda.Device(device_id):
            state.set(np.array([_SEED[0], 0], np.uint64))
