#!/usr/bin/env python3
"""A straightforward numpy/scipy implementation of stepd's default step pipeline, for comparison.

Same stages as Sources/StepProcessing: linear resampling to 60 Hz (a new grid after a gap > 0.5 s), magnitude,
second-order Butterworth high-pass 0.8 Hz and low-pass 2.5 Hz (scipy.signal.lfilter, RBJ cookbook
coefficients), the walking gate's measures (WalkingGate.swift), then the gait-cycle hysteresis and the walking
bout. Resampling, filtering and the gate's measures are vectorised; the cycle and bout logic is a state machine
over samples, so it is a plain Python loop.

    tools/reference_pipeline.py [--seconds S] [--counts] DIR...

Prints the step count per trace with --counts (they should equal `stepd bench`'s), and the throughput in
input samples per second on one core (samples already in memory, timed by process CPU time), as the last
line: `reference samples/s: N`.
"""
import argparse, glob, gzip, os, sys, time
import numpy as np
from scipy.signal import lfilter, lfilter_zi

RATE_HZ = 60.0
GAP_S = 0.5
CYCLE = dict(floor=0.6, fraction=0.25, follow=0.1, decay_s=1.0)
BOUT = dict(confirm=6, min_interval=0.28, max_interval=1.5, min_period_fraction=0.6, stride_tolerance=0.2,
            step_asymmetry=2.0, amplitude_spread=4.0, cross_foot_amplitude_spread=6.0, min_amplitude_fraction=0.35,
            period_rate=0.2, amplitude_rate=0.1, missed_min_periods=1.6, missed_max_periods=2.4,
            rhythm_min_periods=1.0, rhythm_max_periods=2.2, rhythm_amplitude_fraction=0.2, short_bout=4,
            short_tolerance=0.15, short_amplitude_spread=2.0, short_cross_foot_spread=3.0,
            initiation=True, initiation_min_periods=0.9, initiation_max_periods=1.5, gate_open_from_cycle=2,
            fast_min_interval=0.2, fast_max_interval=0.36, fast_max_period_fraction=0.75, turned_wait=0.95)
GATE = dict(vertical_share=0.07, band_share=0.2, band_share_per_turn=0.2, shock_relief=2.0, energy_s=2.0, band_share_s=4.0,
            turn_s=2.0, gravity_s=0.25, shock_hz=4.0, dropout_s=0.5, bout_closed_s=4.0)
# No closing step when the gravity direction (acceleration low-passed at posture_s) has turned by more than
# posture_turn_rad from its value at the bout's steps (sitting down).
POSTURE = dict(posture_s=0.5, posture_turn_rad=np.pi / 9)


def biquad(kind, cutoff_hz, rate_hz=RATE_HZ, q=2 ** -0.5):
    w = 2 * np.pi * cutoff_hz / rate_hz
    alpha, c = np.sin(w) / (2 * q), np.cos(w)
    a0 = 1 + alpha
    if kind == 'low':
        b = np.array([(1 - c) / 2, 1 - c, (1 - c) / 2]) / a0
    else:
        b = np.array([(1 + c) / 2, -(1 + c), (1 + c) / 2]) / a0
    return b, np.array([1, -2 * c / a0, (1 - alpha) / a0])


HIGH = biquad('high', 0.8)
LOW = biquad('low', 2.5)


def resample(t, xyz):
    """Segments split at gaps or backward time; each on its own grid from its first sample."""
    d = np.diff(t)
    cuts = np.where((d > GAP_S) | (d < 0))[0] + 1
    for s, e in zip(np.r_[0, cuts], np.r_[cuts, len(t)]):
        ts, xs = t[s:e], xyz[s:e]
        keep = np.r_[True, np.diff(ts) > 0]
        ts, xs = ts[keep], xs[keep]
        n = int(np.floor((ts[-1] - ts[0]) * RATE_HZ + 1e-9)) + 1
        grid = ts[0] + np.arange(n) / RATE_HZ
        grid = grid[grid <= ts[-1]]
        yield grid, np.column_stack([np.interp(grid, ts, xs[:, i]) for i in range(3)])


def band_pass(magnitude):
    y = lfilter(*HIGH, magnitude, zi=lfilter_zi(*HIGH) * magnitude[0])[0]
    return lfilter(*LOW, y)


def ema(x, seconds, start=0.0):
    """One-pole low-pass along axis 0, from `start`: y += (x - y) / (rate * seconds)."""
    a = 1 / (RATE_HZ * seconds)
    return lfilter([a], [1, -(1 - a)], x, axis=0, zi=[(1 - a) * start])[0]


def gate_open(uniform, band):
    """WalkingGate: whether the motion is gait at each sample (vertical share of all motion, and of the walking
    band against the device's turning rate discounted by heel-strike shock)."""
    g = GATE
    high = np.column_stack([lfilter(*HIGH, uniform[:, i] - uniform[0, i]) for i in range(3)])
    in_band = np.column_stack([lfilter(*LOW, high[:, i]) for i in range(3)])
    magnitude = np.sqrt((uniform ** 2).sum(axis=1))
    shock = lfilter(*biquad('high', g['shock_hz']), magnitude - magnitude[0])
    vertical = ema(band ** 2, g['energy_s'])
    motion = ema((high ** 2).sum(axis=1), g['energy_s'])
    shock_energy = ema(shock ** 2, g['energy_s'])
    gravity = np.column_stack([ema(uniform[:, i], g['gravity_s'], uniform[0, i]) for i in range(3)])
    direction = gravity / np.linalg.norm(gravity, axis=1, keepdims=True)
    turn = ema(np.r_[0, np.linalg.norm(np.diff(direction, axis=0), axis=1) * RATE_HZ], g['turn_s'])
    # vertical_slow >= (share + per_turn * turn / (1 + relief * (shock / vertical)^3)) * band_slow, multiplied
    # through by (vertical^3 + relief * shock^3) > 0, as WalkingGate computes it (no division)
    v3 = (vertical + 1e-9) ** 3
    discounted = v3 + g['shock_relief'] * shock_energy ** 3
    return ((vertical >= g['vertical_share'] * motion)
            & (ema(band ** 2, g['band_share_s']) * discounted
               >= (g['band_share'] * discounted + g['band_share_per_turn'] * turn * v3)
               * ema((in_band ** 2).sum(axis=1), g['band_share_s'])))


def detect(grid, value, gate=None, posture=None):
    """Gait cycles with adaptive hysteresis, counted only inside confirmed walking bouts; a bout is confirmed
    only when the walking gate has been open since the third cycle of its run, and ends (without a closing
    step) once the gate has been closed for bout_closed_s."""
    c, b = CYCLE, BOUT
    if gate is None:
        gate = np.ones(len(grid), bool)
    open_since, closed_at = np.inf, np.inf
    decay = 1 - 1 / (RATE_HZ * c['decay_s'])
    rising, crest, crest_t, trough, trough_before, rise_t, env = False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    walking, last, period, size = False, -np.inf, 0.55, 0.0
    held_t, held_a, steps = [], [], []
    pre_t, pre_a, last_a = -np.inf, 0.0, 0.0  # the cycle just before the held ones; the last step's size

    def end_bout(posture_changed=False):
        # Gait termination: the closing step brings the trailing foot alongside, with almost no vertical motion;
        # none after a change of posture (the walk ended with a sit).
        nonlocal waiting
        if waiting is not None and not posture_changed:
            steps.append(waiting)
        waiting = None
        if not posture_changed:
            steps.append(last + period)
        return False, [], []

    if posture is None:
        posture = np.tile([0.0, 0.0, 1.0], (len(grid), 1))
    cos_turn = np.cos(POSTURE['posture_turn_rad'])
    walking_posture = np.zeros(3)
    waiting = None  # a cycle of the bout that came while the posture had turned, waiting for the next step

    def has_turned(here):
        dot = float(here @ walking_posture)
        lengths = float(here @ here) * float(walking_posture @ walking_posture)
        return dot <= 0 or dot * dot < cos_turn * cos_turn * lengths
    recent, fast = [], False  # the bout's last full-sized cycles; whether it has taken a stair descent's quick rhythm

    def drop(keep):
        nonlocal pre_t, pre_a, held_t, held_a
        k = len(held_t) - keep
        if k > 0:
            pre_t, pre_a = held_t[k - 1], held_a[k - 1]
            held_t, held_a = held_t[k:], held_a[k:]

    for t, v, is_open, here in zip(grid.tolist(), value.tolist(), gate.tolist(), posture):
        if is_open:
            closed_at = np.inf
            if open_since == np.inf:
                open_since = t
        else:
            if closed_at == np.inf:
                closed_at = t
            if t - closed_at > GATE['dropout_s']:
                open_since = np.inf  # closed for longer than a jolt
        h = max(c['floor'], c['fraction'] * env)
        cycle = None
        if rising:
            if v > crest:
                crest, crest_t = v, t
            elif v < crest - h:
                rising, trough = False, v
                amp = crest - trough_before
                env = amp if amp > env else env + (amp - env) * c['follow']
                cycle = (0.5 * (rise_t + crest_t), amp)
        elif v < trough:
            trough = v
        elif v > trough + h:
            rising, crest, crest_t, rise_t, trough_before = True, v, t, t, trough
        env *= decay
        if cycle is not None:
            ct, ca = cycle
            was_walking, counted = walking, len(steps)
            if walking:
                iv = ct - last
                turned = has_turned(here)  # no turn step once the device tilted
                on_rhythm = not turned and b['rhythm_min_periods'] * period <= iv <= b['rhythm_max_periods'] * period
                gate = b['rhythm_amplitude_fraction'] if on_rhythm else b['min_amplitude_fraction']
                soon = iv < max(b['fast_min_interval'] if fast else b['min_interval'], b['min_period_fraction'] * period)
                if ca >= b['min_amplitude_fraction'] * size:
                    recent = (recent + [ct])[-b['short_bout']:]
                    if soon and not fast and len(recent) == b['short_bout']:
                        # Cycles at half the walk's period, even as a short bout: a stair descent, not a second crest.
                        d = np.diff(recent); m = float(np.median(d))
                        if (b['fast_min_interval'] <= m <= min(b['fast_max_interval'], b['fast_max_period_fraction'] * period)
                                and np.all(np.abs(d - m) <= b['short_tolerance'] * m)):
                            fast, period, soon = True, m, iv < b['fast_min_interval']
                if (waiting is not None and b['rhythm_min_periods'] * period <= iv <= b['rhythm_max_periods'] * period
                        and ca >= b['rhythm_amplitude_fraction'] * size):
                    steps.append(waiting); waiting = None  # the walk goes on, on its rhythm
                if ca < gate * size or soon:
                    ct = None
                elif iv <= b['max_interval']:
                    if waiting is not None:
                        steps.append(waiting); waiting = None  # the walk goes on: the tilted cycle was a step
                    normal = b['min_amplitude_fraction'] * size  # a long interval between two turn-sized cycles is one pivot step
                    if fast and iv > b['missed_min_periods'] * period:
                        fast, period = False, iv  # back to the walk's rhythm, not a missed footfall
                    elif (b['missed_min_periods'] * period < iv < b['missed_max_periods'] * period
                            and ca >= normal and last_a >= normal):
                        steps.append(last + iv / 2); iv = iv / 2
                    if turned and b['turned_wait'] > 0:
                        waiting = ct
                    else:
                        steps.append(ct)
                    last = ct; last_a = ca
                    period += (iv - period) * b['period_rate']; size += (ca - size) * b['amplitude_rate']
                    ct = None
                else:
                    walking, held_t, held_a = end_bout()
            if ct is not None and steps and ct <= steps[-1]:
                ct = None  # a cycle of the bout that has just ended
            if ct is not None:
                if held_t and ct - held_t[-1] < b['min_interval']:
                    if ca > held_a[-1]:
                        held_t[-1], held_a[-1] = ct, ca
                else:
                    if held_t and ct - held_t[-1] > b['max_interval']:
                        drop(0)
                    held_t.append(ct); held_a.append(ca)
                    if len(held_t) >= 3:
                        j1, j2 = held_t[-1] - held_t[-2], held_t[-2] - held_t[-3]
                        if max(j1, j2) > b['step_asymmetry'] * min(j1, j2):
                            drop(2)
                    if len(held_t) >= 4:
                        i1, i2, i3 = held_t[-1] - held_t[-2], held_t[-2] - held_t[-3], held_t[-3] - held_t[-4]
                        if abs(i1 - i3) > b['stride_tolerance'] * (i1 + i2):
                            drop(2)
                    k = 0
                    while not sizes_agree(held_a[k:], b['amplitude_spread'], b['cross_foot_amplitude_spread']):
                        k += 1
                    drop(len(held_t) - k)
                    run = len(held_t) >= b['confirm'] or is_short_bout(held_t, held_a)
                    gait = is_open and open_since <= held_t[min(b['gate_open_from_cycle'], len(held_t) - 1)]
                    if run and not gait and len(held_t) >= b['confirm']:
                        drop(b['confirm'] - 1)  # regular, but not gait: slide the run on
                    elif run and gait:
                        period = float(np.median(np.diff(held_t))); size = float(np.median(held_a))
                        lead = held_t[0] - pre_t
                        if (b['initiation'] and (not steps or pre_t > steps[-1])
                                and b['initiation_min_periods'] * period <= lead <= b['initiation_max_periods'] * period
                                and pre_a >= b['rhythm_amplitude_fraction'] * size):
                            steps.append(pre_t)  # gait initiation: the push-off just before the run
                        steps.extend(held_t); last = held_t[-1]; last_a = held_a[-1]; walking = True
                        recent, fast = list(held_t[-b['short_bout']:]), False
                        held_t, held_a = [], []; pre_t = -np.inf
            if walking and len(steps) > counted:  # not at a cycle that waits
                walking_posture = walking_posture + (here - walking_posture) * 0.5 if was_walking else here.copy()
        if waiting is not None and t - waiting >= b['turned_wait']:
            if not has_turned(here):
                steps.append(waiting)  # the posture came back: the walk's
            waiting = None  # else the sit's
        if walking and t - last > b['max_interval']:
            walking, held_t, held_a = end_bout(has_turned(here))
        elif walking and not is_open and t - closed_at > GATE['bout_closed_s']:
            if waiting is not None and not has_turned(here):
                steps.append(waiting)
            walking, held_t, held_a, waiting = False, [], [], None  # no longer gait: the bout ends where the motion changed
    return steps


def is_short_bout(held_t, held_a):
    """A few steps between pauses: the last `short_bout` cycles evenly spaced and of one size."""
    b = BOUT
    if len(held_t) < b['short_bout']:
        return False
    times, sizes = held_t[-b['short_bout']:], held_a[-b['short_bout']:]
    intervals = np.diff(times)
    typical = float(np.median(intervals))
    return bool(np.all(np.abs(intervals - typical) <= b['short_tolerance'] * typical)
                and sizes_agree(sizes, b['short_amplitude_spread'], b['short_cross_foot_spread']))


def sizes_agree(sizes, per_foot, across):
    """Cycles alternate feet: each foot's sizes within per_foot of each other, all of them within across."""
    return all(max(foot) <= per_foot * min(foot) for foot in (sizes[0::2], sizes[1::2]) if foot) \
        and max(sizes) <= across * min(sizes)


def pipeline(t, xyz):
    steps = []
    for grid, uniform in resample(t, xyz):
        band = band_pass(np.sqrt((uniform ** 2).sum(axis=1)))
        steps += detect(grid, band, gate_open(uniform, band), ema(uniform, POSTURE['posture_s'], uniform[0]))
    return steps


def traces(folders):
    for folder in folders:
        paths = sorted(glob.glob(os.path.join(folder, '*', 'accel.csv*'))) or sorted(glob.glob(os.path.join(folder, 'accel.csv*')))
        for path in paths:
            opener = gzip.open if path.endswith('.gz') else open
            with opener(path, 'rt') as f:
                data = np.loadtxt(f, delimiter=',', skiprows=1)
            yield os.path.basename(os.path.dirname(path)), data[:, 0].copy(), data[:, 1:4].copy()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seconds', type=float, default=3.0, help='CPU seconds to time (at least one pass)')
    parser.add_argument('--counts', action='store_true', help='print the step count per trace')
    parser.add_argument('folders', nargs='+')
    args = parser.parse_args()
    loaded = list(traces(args.folders))
    if not loaded:
        sys.exit(f'no traces under {" ".join(args.folders)}')
    if args.counts:
        for name, t, xyz in loaded:
            print(f'{name} {len(pipeline(t, xyz))}')
    processed, start = 0, time.process_time()
    while True:
        for name, t, xyz in loaded:
            pipeline(t, xyz)
            processed += len(t)
            if time.process_time() - start >= args.seconds:
                break
        else:
            continue
        break
    elapsed = time.process_time() - start
    print(f'reference samples/s: {processed / elapsed:.0f}')


if __name__ == '__main__':
    main()
