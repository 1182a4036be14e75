// The shape legend: the letters every shape comment in posgrad uses, e.g. q [B, H, N, Dh].
// A file that writes shapes refers here; a letter used only inside one file (a loop-local
// extent) is defined in that file where it is used.
//
//   B    batch: sequences, images or trees in one step
//   N    tokens (queries) of one sequence; for images N = S0 * S1 * ... (row-major)
//   T    tokens of a causal (language-model) sequence, when it differs from N
//   M    keys of one attention: N, or the cache plus the segment (M = cache + T)
//   D    model width;  Dh  head width (D = H * Dh);  Dv  value width when it differs from Dh
//   H    attention heads
//   K    key slots one query scores in a score layout: M for the dense layout, W for a window
//   W    window slots: the keys a span- or window-limited query can reach
//   R    relative offsets a relative scheme tabulates: 2N - 1 in 1-D, (2S - 1)^n on grids
//   S    structure size per positional axis (a 32 x 32 image: S = 32, n = 2); S0, S1 per axis
//   n    positional dimensions (1 for sequences, 2 for images)
//   C    channels of an image, or classes of a classifier's logits (said where used)
//   P    rows of a position table (learned absolute embedding, tree paths)
//   G    generators of an orthogonal parameterisation (heads x axes, or branches)
//   L    length of a whole token stream (a corpus split)
//   V    vocabulary size
//
// Deliberately holds no code: it is read, not included.
#pragma once
