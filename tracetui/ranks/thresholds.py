"""Every threshold of the verdicts about a run of ranks, in one place (docs/ranks.md says why each).

**Straggler** (:mod:`tracetui.ranks.straggler`). A rank is named only when all three hold:

* it arrived last at more than :data:`STRAGGLER_LAST_SHARE` of the *significant* collectives it
  took part in — those whose arrival skew is at least :data:`SIGNIFICANT_SKEW_SHARE` of the median
  step (HTA's straggler analysis ignores communication shorter than 1 % of the iteration, its
  ``min_normalized_duration``; below it, who comes last is a coin toss: FSDP's prefetched
  all-gathers end either way by microseconds);
* the time the others wait for it, per step and per waiting rank, is at least
  :data:`STRAGGLER_STEP_SHARE` of the median step: a rank that costs the others less than a tenth of
  their step is a lag, not a straggler (the bundled healthy 2-rank DDP run: 5.4 %; the deliberate
  4–8 ms stragglers of the bundled runs: 11 % to 38 %; 10 % is also what ``diff`` calls a change in
  GPU time);
* and at least :data:`STRAGGLER_MIN_WAIT_US` per step: on steps of a few milliseconds a rank
  descheduled once costs a tenth of a step without being slow.

**Straggler's cause** (:mod:`tracetui.ranks.cause`). The largest difference between the
straggler's time and the others' median before the collectives it is late to is named the cause
only when it explains at least :data:`CAUSE_MIN_SHARE` of the lag (more than any other part can);
otherwise "no single cause", listing the differences of at least :data:`CAUSE_LIST_SHARE`.

**Clocks** (:mod:`tracetui.ranks.clocks`). A rank's offset is corrected when it differs from the
reference ranks' by more than its spread: :data:`CLOCK_SPREAD_SIGMAS` robust standard deviations of
two ranks' end difference at one collective (95 % of the collectives' ends agree within it), or
:data:`CLOCK_SE_SIGMAS` standard errors of the median where the rank shares too few collectives for
that to be the larger, and never less than :data:`CLOCK_FLOOR_NS`. With fewer than
:data:`CLOCK_MIN_PAIRS` end differences (a profile of one collective) the spread is unknown and no
offset is applied.
"""

from __future__ import annotations

STRAGGLER_LAST_SHARE = 0.5  # last at more than half of the significant collectives it took part in
SIGNIFICANT_SKEW_SHARE = 0.01  # a collective is significant from an arrival skew of 1 % of the median step
STRAGGLER_STEP_SHARE = 0.10  # the others wait at least 10 % of the median step for it …
STRAGGLER_MIN_WAIT_US = 500.0  # … and at least 0.5 ms per step

CAUSE_MIN_SHARE = 0.5  # a difference is the straggler's cause when it explains half its lag or more
CAUSE_LIST_SHARE = 0.1  # without one, the differences of a tenth of the lag or more are listed

CLOCK_SPREAD_SIGMAS = 2.0  # the spread: 2 robust σ of two ranks' end difference at one collective …
CLOCK_SE_SIGMAS = 3.0  # … or 3 standard errors of the median offset, where larger (few collectives)
CLOCK_FLOOR_NS = 10_000  # … and at least 10 µs: NCCL kernels of one collective end within a few µs,
# and CUPTI maps GPU timestamps onto the host clock to within a few µs
CLOCK_MIN_PAIRS = 3  # σ needs this many end differences of two ranks; with fewer no offset is applied
MAD_SIGMA = 1.4826  # a normal distribution's σ per median absolute deviation
MEDIAN_SE = 1.2533  # the standard error of a median, per σ/√n (√(π/2))
