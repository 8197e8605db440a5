/*
 * fake_model.h: what the stand-in drivers (drive.c, drive_pending.c) share:
 * seeded fake logits, applying a sampler to a few candidates, and exiting
 * on an error. Each driver sets DRIVER_NAME before including it.
 */

#ifndef TOOLDEC_FAKE_MODEL_H
#define TOOLDEC_FAKE_MODEL_H

#include "tooldec_llama_sampler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static inline void die(const char *what) {
    fprintf(stderr, DRIVER_NAME ": %s\n", what);
    exit(2);
}

static uint64_t rng_state;

static inline uint64_t next(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Seeded noise, with the padding ids (from `vocab_size` up to `n_vocab`)
 * and the first 64 ids boosted far above the rest: an unmasked pick would
 * take them. */
static inline void fake_logits(float *logits, int32_t n_vocab, int32_t vocab_size) {
    for (int32_t i = 0; i < n_vocab; i++) {
        logits[i] = (float)(next() % 10000) / 1000.0f - 5.0f;
    }
    for (int32_t i = vocab_size; i < n_vocab; i++) {
        logits[i] = 100.0f; /* padding: must never be picked */
    }
    for (int32_t i = 0; i < 64 && i < n_vocab; i++) {
        logits[i] += 50.0f;
    }
}

/* Applies `td` alone to `n` (at most 64) candidates and reports whether
 * each stayed finite. */
static inline void apply_some(struct llama_sampler *td, const llama_token *ids, size_t n, bool *finite) {
    llama_token_data data[64];
    for (size_t i = 0; i < n; i++) {
        data[i].id = ids[i];
        data[i].logit = 1.0f;
        data[i].p = 0.0f;
    }
    llama_token_data_array cur = {.data = data, .size = n, .selected = -1, .sorted = true};
    llama_sampler_apply(td, &cur);
    for (size_t i = 0; i < n; i++) {
        finite[i] = data[i].logit != -INFINITY;
    }
}

#endif /* TOOLDEC_FAKE_MODEL_H */
