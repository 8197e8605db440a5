/*
 * real.c: the tooldec sampler in a real llama.cpp (built from the sources
 * llama-cpp-python vendors; python/test-engines.sh builds it), on a GGUF
 * model: a chain [tooldec, greedy] or [tooldec, top-k, temperature, dist],
 * the caller's n_predict as the grammar's budget, then the same chain
 * cloned and reset.
 *
 *   real MODEL.gguf ARTIFACT.tdm|TOOLS.json N_PREDICT greedy|dist SEED PROMPT
 *
 * Given a tool list (.json) instead of an artifact, the tools are compiled
 * here for the model's own GGUF vocabulary (hermes, entry "calls", as
 * test_real_llama.py compiles its artifact), started deferred, and the
 * sampler is tooldec_llama_sampler_init_pending's: its masks are computed
 * on demand until a step needs the artifact; "early K" then says how many
 * tokens of the first generation were sampled before the artifact.
 *
 * Prints "tokens ID ID ..." for the generation (EOS included when
 * sampled), then "clone ID ID ..." for a generation from a clone of the
 * chain made after the first token, and "reset same|differs" for greedy
 * decoding after llama_sampler_reset (the same output again), then
 * "done". PROMPT is tokenized with special tokens parsed.
 */

#include "tooldec_llama_sampler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, const char *detail) {
    fprintf(stderr, "real: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(2);
}

/* The pending matcher whose early steps `generate` counts (NULL: none). */
static tooldec_pending_matcher *watched;
static int early_steps;

/* Decodes `prompt` into a fresh sequence 0 of `ctx`. */
static void start(struct llama_context *ctx, llama_token *prompt, int32_t n) {
    llama_memory_clear(llama_get_memory(ctx), true);
    if (llama_decode(ctx, llama_batch_get_one(prompt, n)) != 0) {
        die("llama_decode failed on the prompt", NULL);
    }
}

/* Generates with `chain` after `first` tokens already in `out`; returns
 * how many tokens `out` holds. */
static int32_t generate(struct llama_context *ctx,
                        const struct llama_vocab *vocab,
                        struct llama_sampler *chain,
                        llama_token *out,
                        int32_t first,
                        int32_t n_predict) {
    int32_t n = first;
    while (n < n_predict) {
        early_steps += watched && tooldec_pending_matcher_is_early(watched);
        llama_token t = llama_sampler_sample(chain, ctx, -1);
        out[n++] = t;
        if (llama_vocab_is_eog(vocab, t)) {
            break;
        }
        if (llama_decode(ctx, llama_batch_get_one(&out[n - 1], 1)) != 0) {
            die("llama_decode failed", NULL);
        }
    }
    return n;
}

static void print(const char *label, const llama_token *ids, int32_t n) {
    printf("%s", label);
    for (int32_t i = 0; i < n; i++) {
        printf(" %d", ids[i]);
    }
    printf("\n");
}

/* A chain over the artifact `art`, or else over the running compile `p`. */
static struct llama_sampler *chain_of(const tooldec_artifact *art,
                                      const tooldec_pending *p,
                                      const struct llama_vocab *vocab,
                                      uint32_t budget,
                                      bool greedy,
                                      uint32_t seed) {
    char err[512];
    int32_t n_vocab = llama_vocab_n_tokens(vocab);
    struct llama_sampler *td =
        art ? tooldec_llama_sampler_init(art, vocab, NULL, &budget, 0, n_vocab, err, sizeof err)
            : tooldec_llama_sampler_init_pending(p, vocab, NULL, &budget, 0, n_vocab, err, sizeof err);
    if (td == NULL) {
        die("tooldec_llama_sampler_init", err);
    }
    watched = art ? NULL : tooldec_llama_sampler_pending_matcher(td);
    struct llama_sampler *chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(chain, td);
    if (greedy) {
        llama_sampler_chain_add(chain, llama_sampler_init_greedy());
    } else {
        llama_sampler_chain_add(chain, llama_sampler_init_top_k(40));
        llama_sampler_chain_add(chain, llama_sampler_init_temp(0.8f));
        llama_sampler_chain_add(chain, llama_sampler_init_dist(seed));
    }
    return chain;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        die("usage: real MODEL.gguf ARTIFACT.tdm N_PREDICT greedy|dist SEED PROMPT", NULL);
    }
    int32_t n_predict = atoi(argv[3]);
    bool greedy = strcmp(argv[4], "greedy") == 0;
    uint32_t seed = (uint32_t)strtoul(argv[5], NULL, 10);
    if (n_predict <= 0 || n_predict > 4096) {
        die("N_PREDICT out of range", argv[3]);
    }
    char err[512];
    tooldec_artifact *art = NULL;
    size_t len = strlen(argv[2]);
    bool tools = len > 5 && strcmp(argv[2] + len - 5, ".json") == 0;
    if (!tools && tooldec_artifact_open(argv[2], &art, err, sizeof err) != TOOLDEC_OK) {
        die("tooldec_artifact_open", err);
    }
    llama_backend_init();
    struct llama_model *model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (model == NULL) {
        die("cannot load the model", argv[1]);
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 2048;
    cp.n_threads = 1;
    cp.n_threads_batch = 1;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    llama_token prompt[1024];
    int32_t np = llama_tokenize(vocab, argv[6], (int32_t)strlen(argv[6]), prompt, 1024, false, true);
    if (np <= 0) {
        die("cannot tokenize the prompt", NULL);
    }

    tooldec_compiler *compiler = NULL;
    tooldec_pending *pending = NULL;
    if (tools) {
        /* The model is loaded first: the compile starts when the request
         * (its tools) comes. */
        char *text = NULL;
        size_t n_text = 0;
        FILE *f = fopen(argv[2], "rb");
        if (f && fseek(f, 0, SEEK_END) == 0) {
            long end = ftell(f);
            text = end > 0 ? malloc((size_t)end) : NULL;
            n_text = text && fseek(f, 0, SEEK_SET) == 0 ? fread(text, 1, (size_t)end, f) : 0;
        }
        if (f) {
            fclose(f);
        }
        if (n_text == 0) {
            die("cannot read the tools", argv[2]);
        }
        if (tooldec_compiler_open(argv[1], NULL, 0, 0, &compiler, err, sizeof err) != TOOLDEC_OK) {
            die("tooldec_compiler_open", err);
        }
        const char *options = "{\"format\": \"hermes\", \"entry\": \"calls\"}";
        if (tooldec_compiler_start_deferred(compiler, text, n_text, options, &pending, err, sizeof err) !=
            TOOLDEC_OK) {
            die("tooldec_compiler_start_deferred", err);
        }
        free(text);
    }
    llama_token *out = calloc((size_t)n_predict, sizeof *out);
    struct llama_sampler *chain = chain_of(art, pending, vocab, (uint32_t)n_predict, greedy, seed);
    start(ctx, prompt, np);
    /* The first token, then a clone of the chain at that point. */
    int32_t n = generate(ctx, vocab, chain, out, 0, 1);
    struct llama_sampler *copy = llama_sampler_clone(chain);
    n = generate(ctx, vocab, chain, out, n, n_predict);
    print("tokens", out, n);
    if (tools) {
        printf("early %d\n", early_steps);
    }
    watched = NULL; /* the clone and the reset are not counted */

    llama_token *again = calloc((size_t)n_predict, sizeof *again);
    again[0] = out[0];
    start(ctx, prompt, np);
    if (llama_decode(ctx, llama_batch_get_one(&again[0], 1)) != 0) {
        die("llama_decode failed", NULL);
    }
    int32_t m = generate(ctx, vocab, copy, again, 1, n_predict);
    print("clone", again, m);

    if (greedy) {
        llama_sampler_reset(chain);
        start(ctx, prompt, np);
        int32_t k = generate(ctx, vocab, chain, again, 0, n_predict);
        printf("reset %s\n", k == n && memcmp(again, out, (size_t)n * sizeof *out) == 0 ? "same" : "differs");
    }
    printf("done\n");
    llama_sampler_free(copy);
    llama_sampler_free(chain);
    free(again);
    free(out);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    tooldec_artifact_free(art);
    tooldec_pending_free(pending);
    tooldec_compiler_free(compiler);
    return 0;
}
