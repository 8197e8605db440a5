/*
 * drive.c: drives the tooldec sampler the way a llama.cpp program does,
 * against the stand-in (llama_standin.h): a chain [tooldec, dist or
 * greedy], and per step a fake model's logits through standin_sample
 * (llama_sampler_sample's apply / select / accept), until EOS.
 *
 *   drive ARTIFACT VOCAB OTHER_VOCAB N_VOCAB greedy|dist SEED BUDGET|-
 *
 * VOCAB is the model's vocabulary (a stand-in token list, see
 * standin_vocab_load), the one the artifact was compiled for; OTHER_VOCAB
 * differs from it in one token, and the sampler must refuse it.
 *
 * The fake logits are seeded noise, with the padding ids (from the
 * artifact's vocab size up to N_VOCAB) and the first 64 ids boosted far
 * above the rest: an unmasked greedy pick would take them. Prints
 * "token ID" per step, then checks of clone, of apply on a few candidates
 * against apply on all, of reset, and of misuse, as "check NAME VALUE"
 * lines, and "done STEPS TERMINATED".
 */

#define DRIVER_NAME "drive"
#include "fake_model.h"

#include <string.h>

int main(int argc, char **argv) {
    if (argc != 8) {
        die("usage: drive ARTIFACT VOCAB OTHER_VOCAB N_VOCAB greedy|dist SEED BUDGET|-");
    }
    struct llama_vocab *vocab = standin_vocab_load(argv[2]);
    struct llama_vocab *other = standin_vocab_load(argv[3]);
    if (!vocab || !other) {
        die("cannot read a vocabulary");
    }
    int32_t n_vocab = (int32_t)strtol(argv[4], NULL, 10);
    bool greedy = strcmp(argv[5], "greedy") == 0;
    uint32_t seed = (uint32_t)strtoul(argv[6], NULL, 10);
    uint32_t budget = 0;
    const uint32_t *budget_p = NULL;
    if (strcmp(argv[7], "-") != 0) {
        budget = (uint32_t)strtoul(argv[7], NULL, 10);
        budget_p = &budget;
    }
    rng_state = seed;

    char err[512];
    tooldec_artifact *art = NULL;
    if (tooldec_artifact_open(argv[1], &art, err, sizeof err) != TOOLDEC_OK) {
        die(err);
    }
    int32_t vocab_size = (int32_t)tooldec_artifact_mask_width(art);

    /* The fingerprint llama.cpp's view of the vocabulary gives is the
     * artifact's. */
    uint8_t ours[TOOLDEC_FINGERPRINT_BYTES], theirs[TOOLDEC_FINGERPRINT_BYTES];
    if (tooldec_llama_vocab_fingerprint(vocab, ours, err, sizeof err) != TOOLDEC_OK ||
        tooldec_artifact_vocab_fingerprint(art, theirs) != TOOLDEC_OK) {
        die(err);
    }
    printf("check fingerprint_same %d\n", memcmp(ours, theirs, sizeof ours) == 0);

    /* Misuse first: another vocabulary, a model narrower than the artifact. */
    struct llama_sampler *bad = tooldec_llama_sampler_init(art, other, NULL, NULL, 0, n_vocab, err, sizeof err);
    printf("check other_vocab_refused %d | %s\n", bad == NULL, err);
    bad = tooldec_llama_sampler_init(art, vocab, NULL, NULL, 0, vocab_size - 1, err, sizeof err);
    printf("check narrow_model_refused %d | %s\n", bad == NULL, err);

    struct llama_sampler *td = tooldec_llama_sampler_init(art, vocab, NULL, budget_p, 4, n_vocab, err, sizeof err);
    if (!td) {
        die(err);
    }
    tooldec_artifact_free(art); /* the sampler holds its own reference */
    struct llama_sampler *chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(chain, td);
    llama_sampler_chain_add(chain, greedy ? llama_sampler_init_greedy() : llama_sampler_init_dist(seed));
    printf("check names %s %s %s\n", llama_sampler_name(chain), llama_sampler_name(llama_sampler_chain_get(chain, 0)),
           llama_sampler_name(llama_sampler_chain_get(chain, 1)));

    float *logits = malloc((size_t)n_vocab * sizeof *logits);
    float *copy = malloc((size_t)n_vocab * sizeof *copy);
    if (!logits || !copy) {
        die("out of memory");
    }
    tooldec_matcher *m = tooldec_llama_sampler_matcher(td);
    int steps = 0, clone_same = -1, subset_same = 1, subset_checks = 0;
    while (!tooldec_matcher_is_terminated(m)) {
        if (steps > 1000) {
            die("no EOS after 1000 tokens");
        }
        fake_logits(logits, n_vocab, vocab_size);
        memcpy(copy, logits, (size_t)n_vocab * sizeof *copy);

        /* Apply on a few candidates (the per-token path) agrees with the
         * full-vocabulary apply (the mask path). */
        {
            llama_token ids[40];
            bool few[40];
            for (int i = 0; i < 40; i++) {
                ids[i] = (llama_token)(next() % (uint64_t)n_vocab);
            }
            ids[0] = -1;            /* never a token */
            ids[1] = n_vocab;       /* past the model */
            ids[2] = n_vocab - 1;   /* padding when the model is wider */
            apply_some(td, ids, 20, few); /* 20 < TOOLDEC_FEW_CANDIDATES */
            bool many[40];
            apply_some(td, ids, 40, many);
            for (int i = 0; i < 20; i++) {
                bool allowed = ids[i] >= 0 && ids[i] < n_vocab &&
                               tooldec_matcher_is_allowed(m, (uint32_t)ids[i]);
                subset_same &= few[i] == many[i] && few[i] == allowed;
                subset_checks++;
            }
        }

        if (steps == 3) {
            /* A clone of the chain picks what the original picks next. */
            struct llama_sampler *c = llama_sampler_clone(chain);
            llama_token a = standin_sample(c, copy, n_vocab);
            struct llama_sampler *ctd = llama_sampler_chain_get(c, 0);
            bool advanced = tooldec_matcher_rollback_depth(tooldec_llama_sampler_matcher(ctd)) ==
                            tooldec_matcher_rollback_depth(m) + (tooldec_matcher_rollback_depth(m) < 4);
            llama_token b = standin_sample(chain, logits, n_vocab);
            clone_same = a == b && advanced;
            llama_sampler_free(c);
            printf("token %d\n", (int)b);
            steps++;
            continue;
        }
        llama_token t = standin_sample(chain, logits, n_vocab);
        printf("token %d\n", (int)t);
        steps++;
        if (tooldec_llama_sampler_failed(td)) {
            die(tooldec_matcher_last_error(m));
        }
    }
    printf("check clone_same %d\n", clone_same);
    printf("check subset_same %d %d\n", subset_same, subset_checks);
    printf("done %d %d\n", steps, tooldec_matcher_is_terminated(m) ? 1 : 0);

    /* reset: back at the start with the creation budget. */
    llama_sampler_reset(chain);
    printf("check reset %d %d\n", tooldec_matcher_is_terminated(m) ? 1 : 0,
           tooldec_matcher_tokens_left(m) == (budget_p ? budget : tooldec_matcher_tokens_left(m)));

    /* accept() of a token the grammar does not allow: recorded, ignored. */
    uint32_t *mask = calloc(((size_t)n_vocab + 31) / 32, sizeof *mask);
    if (!mask) {
        die("out of memory");
    }
    tooldec_matcher_fill_mask(m, mask, ((size_t)n_vocab + 31) / 32);
    llama_token disallowed = -1;
    for (int32_t t = 0; t < n_vocab && disallowed < 0; t++) {
        if (!(mask[t / 32] >> (t % 32) & 1u)) {
            disallowed = t;
        }
    }
    llama_sampler_accept(td, disallowed);
    printf("check bad_accept %d %zu | %s\n", tooldec_llama_sampler_failed(td) ? 1 : 0,
           tooldec_matcher_rollback_depth(m), tooldec_matcher_last_error(m));
    llama_sampler_reset(chain);
    printf("check failed_after_reset %d\n", tooldec_llama_sampler_failed(td) ? 1 : 0);
    printf("check not_ours %d\n", tooldec_llama_sampler_matcher(chain) == NULL);

    free(mask);
    free(logits);
    free(copy);
    llama_sampler_free(chain); /* frees td too */
    standin_vocab_free(vocab);
    standin_vocab_free(other);
    return 0;
}
