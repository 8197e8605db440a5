/*
 * drive_pending.c: drives the tooldec sampler over a compile that is still
 * running (tooldec_llama_sampler_init_pending), the way a llama.cpp
 * program serving a request's own tools would, against the stand-in
 * (llama_standin.h): a chain [tooldec, dist], fake logits per step, until
 * EOS.
 *
 *   drive_pending TOOLS VOCAB OTHER_VOCAB N_VOCAB SEED
 *
 * TOOLS is a tool list compiled here with the built-in GPT-2 vocabulary
 * (hermes, max_tokens 160), started deferred so that the first masks are
 * computed on demand and the artifact is built only when a step needs it
 * (a tight budget). VOCAB is GPT-2 as llama.cpp would list it; OTHER_VOCAB
 * differs in one token, and the sampler must refuse it.
 *
 * Prints "token ID" per step, "check NAME VALUE" lines (misuse refused,
 * early steps, clone, few candidates against all, the artifact's matcher
 * accepting the same tokens, reset, a compile over its state bound), and
 * "done STEPS TERMINATED".
 */

#define DRIVER_NAME "drive_pending"
#include "fake_model.h"

#include <string.h>

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        die("cannot open the tools file");
    }
    char *buf = NULL;
    size_t cap = 0;
    *len = 0;
    for (;;) {
        if (*len == cap) {
            cap = cap ? 2 * cap : 4096;
            buf = realloc(buf, cap);
            if (!buf) {
                die("out of memory");
            }
        }
        size_t got = fread(buf + *len, 1, cap - *len, f);
        if (got == 0) {
            break;
        }
        *len += got;
    }
    fclose(f);
    return buf;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        die("usage: drive_pending TOOLS VOCAB OTHER_VOCAB N_VOCAB SEED");
    }
    size_t tools_len = 0;
    char *tools = read_file(argv[1], &tools_len);
    struct llama_vocab *vocab = standin_vocab_load(argv[2]);
    struct llama_vocab *other = standin_vocab_load(argv[3]);
    if (!vocab || !other) {
        die("cannot read a vocabulary");
    }
    int32_t n_vocab = (int32_t)strtol(argv[4], NULL, 10);
    uint32_t seed = (uint32_t)strtoul(argv[5], NULL, 10);
    rng_state = seed;

    char err[512];
    tooldec_compiler *c = NULL;
    if (tooldec_compiler_gpt2(NULL, 0, 0, &c, err, sizeof err) != TOOLDEC_OK) {
        die(err);
    }
    tooldec_pending *p = NULL;
    const char *options = "{\"format\": \"hermes\", \"max_tokens\": 160}";
    if (tooldec_compiler_start_deferred(c, tools, tools_len, options, &p, err, sizeof err) != TOOLDEC_OK) {
        die(err);
    }
    int32_t vocab_size = (int32_t)tooldec_pending_mask_width(p);

    struct llama_sampler *bad = tooldec_llama_sampler_init_pending(p, other, NULL, NULL, 0, n_vocab, err, sizeof err);
    printf("check other_vocab_refused %d | %s\n", bad == NULL, err);
    bad = tooldec_llama_sampler_init_pending(p, vocab, NULL, NULL, 0, vocab_size - 1, err, sizeof err);
    printf("check narrow_model_refused %d | %s\n", bad == NULL, err);

    struct llama_sampler *td = tooldec_llama_sampler_init_pending(p, vocab, NULL, NULL, 4, n_vocab, err, sizeof err);
    if (!td) {
        die(err);
    }
    struct llama_sampler *chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(chain, td);
    llama_sampler_chain_add(chain, llama_sampler_init_dist(seed));
    tooldec_pending_matcher *m = tooldec_llama_sampler_pending_matcher(td);
    printf("check which %d %d\n", m != NULL, tooldec_llama_sampler_matcher(td) == NULL);

    float *logits = malloc((size_t)n_vocab * sizeof *logits);
    float *copy = malloc((size_t)n_vocab * sizeof *copy);
    llama_token *sampled = malloc(1001 * sizeof *sampled);
    if (!logits || !copy || !sampled) {
        die("out of memory");
    }
    int steps = 0, early = 0, clone_same = -1, subset_same = 1, subset_checks = 0;
    while (!tooldec_pending_matcher_is_terminated(m)) {
        if (steps > 1000) {
            die("no EOS after 1000 tokens");
        }
        early += tooldec_pending_matcher_is_early(m);
        fake_logits(logits, n_vocab, vocab_size);
        memcpy(copy, logits, (size_t)n_vocab * sizeof *copy);
        {
            /* Few candidates (one token at a time) against all (the mask)
             * against the matcher's own answer. */
            llama_token ids[40];
            bool few[40], many[40];
            for (int i = 0; i < 40; i++) {
                ids[i] = (llama_token)(next() % (uint64_t)n_vocab);
            }
            ids[0] = -1;
            ids[1] = n_vocab;
            ids[2] = n_vocab - 1;
            apply_some(td, ids, 20, few);
            apply_some(td, ids, 40, many);
            for (int i = 0; i < 20; i++) {
                bool allowed = ids[i] >= 0 && ids[i] < n_vocab &&
                               tooldec_pending_matcher_is_allowed(m, (uint32_t)ids[i]);
                subset_same &= few[i] == many[i] && few[i] == allowed;
                subset_checks++;
            }
        }
        llama_token t;
        if (steps == 3) {
            /* A clone of the chain picks what the original picks next, and
             * advancing it leaves the original where it was. */
            struct llama_sampler *cl = llama_sampler_clone(chain);
            if (!cl) {
                die("the chain did not clone");
            }
            llama_token a = standin_sample(cl, copy, n_vocab);
            llama_sampler_free(cl);
            t = standin_sample(chain, logits, n_vocab);
            clone_same = a == t;
        } else {
            t = standin_sample(chain, logits, n_vocab);
        }
        printf("token %d\n", (int)t);
        sampled[steps++] = t;
        if (tooldec_llama_sampler_failed(td)) {
            die(tooldec_pending_matcher_last_error(m));
        }
    }
    printf("check early %d\n", early);
    printf("check clone_same %d\n", clone_same);
    printf("check subset_same %d %d\n", subset_same, subset_checks);
    printf("done %d %d\n", steps, tooldec_pending_matcher_is_terminated(m) ? 1 : 0);

    /* An entry the grammar lacks is refused (only the artifact can say so:
     * this would have run the deferred compile before the walk). */
    struct llama_sampler *bad_entry = tooldec_llama_sampler_init_pending(p, vocab, "nowhere", NULL, 0, n_vocab, err, sizeof err);
    printf("check unknown_entry_refused %d | %s\n", bad_entry == NULL, err);

    /* The finished artifact's matcher takes the same tokens and ends. */
    tooldec_artifact *art = NULL;
    if (tooldec_pending_wait(p, &art, err, sizeof err) != TOOLDEC_OK) {
        die(err);
    }
    tooldec_matcher *am = NULL;
    if (tooldec_matcher_new(art, NULL, NULL, 0, &am, err, sizeof err) != TOOLDEC_OK) {
        die(err);
    }
    int taken = 0;
    while (taken < steps && tooldec_matcher_accept_token(am, (uint32_t)sampled[taken]) == TOOLDEC_OK) {
        taken++;
    }
    printf("check artifact_walk %d %d\n", taken == steps, tooldec_matcher_is_terminated(am) ? 1 : 0);

    /* reset: back at the start, from the artifact now. */
    llama_sampler_reset(chain);
    printf("check reset %d %d %d\n", tooldec_pending_matcher_is_terminated(m) ? 1 : 0,
           tooldec_pending_matcher_is_early(m) ? 1 : 0, tooldec_llama_sampler_failed(td) ? 1 : 0);
    printf("check not_ours %d\n", tooldec_llama_sampler_pending_matcher(chain) == NULL);

    /* A compile over its state bound: the sampler starts early, and when
     * the grammar outgrows the bound its masks wait for the compile's
     * error: nothing is allowed, and accept() flags the sampler. */
    {
        tooldec_pending *tight = NULL;
        const char *few_states = "{\"format\": \"hermes\", \"max_states\": 10}";
        if (tooldec_compiler_start_deferred(c, tools, tools_len, few_states, &tight, err, sizeof err) != TOOLDEC_OK) {
            die(err);
        }
        struct llama_sampler *t = tooldec_llama_sampler_init_pending(tight, vocab, NULL, NULL, 0, n_vocab, err, sizeof err);
        if (t == NULL) {
            printf("check state_bound refused | %s\n", err);
        } else {
            /* Greedy steps until the masks die: then the pick is a token
             * the grammar refuses, and accept() flags the sampler. */
            struct llama_sampler *tc = llama_sampler_chain_init(llama_sampler_chain_default_params());
            llama_sampler_chain_add(tc, t);
            llama_sampler_chain_add(tc, llama_sampler_init_greedy());
            int k = 0;
            for (; k < 300 && !tooldec_llama_sampler_failed(t); k++) {
                fake_logits(logits, n_vocab, vocab_size);
                standin_sample(tc, logits, n_vocab);
            }
            printf("check state_bound failed %d after %d | %s\n", tooldec_llama_sampler_failed(t) ? 1 : 0, k,
                   tooldec_pending_matcher_last_error(tooldec_llama_sampler_pending_matcher(t)));
            llama_sampler_free(tc);
        }
        tooldec_pending_free(tight);
    }

    tooldec_matcher_free(am);
    tooldec_artifact_free(art);
    free(sampled);
    free(logits);
    free(copy);
    free(tools);
    llama_sampler_free(chain);
    tooldec_pending_free(p);
    tooldec_compiler_free(c);
    standin_vocab_free(vocab);
    standin_vocab_free(other);
    return 0;
}
