/*
 * tooldec_llama_sampler.c: see tooldec_llama_sampler.h.
 *
 * Build it with llama.cpp's include directories (llama.h, ggml.h) and link
 * libtooldec.a (or -ltooldec) and -lm.
 */

#include "tooldec_llama_sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Below this many candidates apply() asks the matcher token by token
 * instead of filling the whole mask. */
#define TOOLDEC_FEW_CANDIDATES 32

/* One of `matcher` and `pending` is set: a finished artifact's matcher, or
 * a pending compile's (masks computed on demand until the artifact lands). */
struct tooldec_llama_ctx {
    tooldec_matcher *matcher;
    tooldec_pending_matcher *pending;
    char *entry;        /* NULL: the default entry */
    uint32_t *mask;     /* words words: the model's logits width */
    size_t words;
    int32_t n_vocab;
    bool failed;
};

static struct llama_sampler_i tooldec_llama_iface;

static const char *tooldec_llama_name(const struct llama_sampler *smpl) {
    (void)smpl;
    return "tooldec";
}

static tooldec_status ctx_accept(struct tooldec_llama_ctx *ctx, uint32_t token) {
    return ctx->pending ? tooldec_pending_matcher_accept_token(ctx->pending, token)
                        : tooldec_matcher_accept_token(ctx->matcher, token);
}

static tooldec_status ctx_fill(struct tooldec_llama_ctx *ctx) {
    return ctx->pending ? tooldec_pending_matcher_fill_mask(ctx->pending, ctx->mask, ctx->words)
                        : tooldec_matcher_fill_mask(ctx->matcher, ctx->mask, ctx->words);
}

static bool ctx_allowed(struct tooldec_llama_ctx *ctx, uint32_t token) {
    return ctx->pending ? tooldec_pending_matcher_is_allowed(ctx->pending, token)
                        : tooldec_matcher_is_allowed(ctx->matcher, token);
}

static void tooldec_llama_accept(struct llama_sampler *smpl, llama_token token) {
    struct tooldec_llama_ctx *ctx = smpl->ctx;
    if (token < 0 || ctx_accept(ctx, (uint32_t)token) != TOOLDEC_OK) {
        ctx->failed = true;
    }
}

static void tooldec_llama_apply(struct llama_sampler *smpl, llama_token_data_array *cur_p) {
    struct tooldec_llama_ctx *ctx = smpl->ctx;
    bool few = cur_p->size < TOOLDEC_FEW_CANDIDATES;
    /* An artifact's matcher cannot fail to fill (the width was checked at
     * creation); a pending one fails when the rest of its compile did, and
     * then nothing is allowed (its per-token answers are false too). */
    bool dead = !few && ctx_fill(ctx) != TOOLDEC_OK;
    bool changed = false;
    for (size_t i = 0; i < cur_p->size; i++) {
        llama_token id = cur_p->data[i].id;
        bool allowed;
        if (dead || id < 0 || id >= ctx->n_vocab) {
            allowed = false;
        } else if (few) {
            allowed = ctx_allowed(ctx, (uint32_t)id);
        } else {
            allowed = (ctx->mask[(uint32_t)id / 32] >> ((uint32_t)id % 32)) & 1u;
        }
        if (!allowed && cur_p->data[i].logit != -INFINITY) {
            cur_p->data[i].logit = -INFINITY;
            changed = true;
        }
    }
    if (changed) {
        cur_p->sorted = false; /* masked entries break a descending order */
    }
}

static void tooldec_llama_reset(struct llama_sampler *smpl) {
    struct tooldec_llama_ctx *ctx = smpl->ctx;
    if (ctx->pending) {
        tooldec_pending_matcher_reset(ctx->pending); /* its own entry */
    } else if (ctx->entry) {
        tooldec_matcher_reset_to(ctx->matcher, ctx->entry);
    } else {
        tooldec_matcher_reset(ctx->matcher);
    }
    ctx->failed = false;
}

static char *copy_string(const char *s) {
    if (!s) {
        return NULL;
    }
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c) {
        memcpy(c, s, n);
    }
    return c;
}

static void free_ctx(struct tooldec_llama_ctx *ctx) {
    if (ctx) {
        tooldec_matcher_free(ctx->matcher);
        tooldec_pending_matcher_free(ctx->pending);
        free(ctx->entry);
        free(ctx->mask);
        free(ctx);
    }
}

/* A context around `matcher` or `pending` (the one given is taken over,
 * freed on failure). */
static struct tooldec_llama_ctx *new_ctx(tooldec_matcher *matcher, tooldec_pending_matcher *pending,
                                         const char *entry, int32_t n_vocab) {
    struct tooldec_llama_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        tooldec_matcher_free(matcher);
        tooldec_pending_matcher_free(pending);
        return NULL;
    }
    ctx->matcher = matcher;
    ctx->pending = pending;
    ctx->n_vocab = n_vocab;
    ctx->words = ((size_t)n_vocab + 31) / 32;
    ctx->mask = malloc(ctx->words * sizeof *ctx->mask);
    ctx->entry = copy_string(entry);
    if (!ctx->mask || (entry && !ctx->entry)) {
        free_ctx(ctx);
        return NULL;
    }
    return ctx;
}

static struct llama_sampler *tooldec_llama_clone(const struct llama_sampler *smpl) {
    const struct tooldec_llama_ctx *ctx = smpl->ctx;
    tooldec_matcher *copy = NULL;
    tooldec_pending_matcher *pending_copy = NULL;
    tooldec_status s = ctx->pending ? tooldec_pending_matcher_clone(ctx->pending, &pending_copy)
                                    : tooldec_matcher_clone(ctx->matcher, &copy);
    if (s != TOOLDEC_OK) {
        return NULL;
    }
    struct tooldec_llama_ctx *c = new_ctx(copy, pending_copy, ctx->entry, ctx->n_vocab);
    if (!c) {
        return NULL;
    }
    c->failed = ctx->failed;
    return llama_sampler_init(&tooldec_llama_iface, c);
}

static void tooldec_llama_free(struct llama_sampler *smpl) {
    free_ctx(smpl->ctx);
    smpl->ctx = NULL;
}

/* CPU only: the backend hooks (llama.cpp's backend sampling) stay NULL, so
 * a chain holding this sampler samples on the CPU. */
static struct llama_sampler_i tooldec_llama_iface = {
    .name = tooldec_llama_name,
    .accept = tooldec_llama_accept,
    .apply = tooldec_llama_apply,
    .reset = tooldec_llama_reset,
    .clone = tooldec_llama_clone,
    .free = tooldec_llama_free,
};

static void set_error(char *err, size_t err_len, const char *msg) {
    if (err && err_len > 0) {
        size_t n = strlen(msg);
        if (n >= err_len) {
            n = err_len - 1;
        }
        memcpy(err, msg, n);
        err[n] = 0;
    }
}

/*
 * The classification mirrors compiler/src/vocab/gguf.rs (GGUF token types
 * 2-3 special, 5 unused, 1, 4 and 6 text) through the attributes llama.cpp
 * derives from those types. A user-defined token (a non-special added
 * token) is text: llama_token_to_piece renders it as its text whether or
 * not `special` is asked for. Checked against the stand-in vocabulary
 * (test/llama_standin.c) and against llama.cpp's own loader on
 * SmolLM2-135M's GGUF (test/real.c: the artifact compiled from the same
 * file must match).
 */
tooldec_status tooldec_llama_vocab_fingerprint(const struct llama_vocab *vocab,
                                               uint8_t *out,
                                               char *err,
                                               size_t err_len) {
    if (!vocab || !out) {
        set_error(err, err_len, "vocab or out is NULL");
        return TOOLDEC_ERR_NULL;
    }
    int32_t n = llama_vocab_n_tokens(vocab);
    if (n < 0) {
        set_error(err, err_len, "the vocabulary has a negative token count");
        return TOOLDEC_ERR_INVALID;
    }
    tooldec_fingerprint *fp = NULL;
    tooldec_status s = tooldec_fingerprint_new((uint32_t)n, &fp);
    if (s != TOOLDEC_OK) {
        set_error(err, err_len, "out of memory");
        return s;
    }
    int32_t cap = 256;
    char *piece = malloc((size_t)cap);
    const int special = LLAMA_TOKEN_ATTR_UNKNOWN | LLAMA_TOKEN_ATTR_CONTROL;
    for (llama_token t = 0; t < n && s == TOOLDEC_OK && piece; t++) {
        enum llama_token_attr attr = llama_vocab_get_attr(vocab, t);
        if (attr & LLAMA_TOKEN_ATTR_UNUSED) {
            s = tooldec_fingerprint_push_unused(fp);
            continue;
        }
        int32_t len = llama_token_to_piece(vocab, t, piece, cap, 0, true);
        if (len < 0) { /* a longer piece: grow and ask again */
            char *grown = realloc(piece, (size_t)-len);
            if (!grown) {
                set_error(err, err_len, "out of memory");
                s = TOOLDEC_ERR_INVALID;
                break;
            }
            piece = grown;
            cap = -len;
            len = llama_token_to_piece(vocab, t, piece, cap, 0, true);
        }
        if (len < 0) {
            set_error(err, err_len, "llama_token_to_piece gave no piece for a token");
            s = TOOLDEC_ERR_INVALID;
        } else if (attr & special) {
            s = tooldec_fingerprint_push_special(fp, (const uint8_t *)piece, (size_t)len);
        } else {
            s = tooldec_fingerprint_push_text(fp, (const uint8_t *)piece, (size_t)len);
        }
    }
    if (!piece) {
        set_error(err, err_len, "out of memory");
        s = TOOLDEC_ERR_INVALID;
    } else if (s == TOOLDEC_OK) {
        s = tooldec_fingerprint_finish(fp, out, err, err_len);
    }
    free(piece);
    tooldec_fingerprint_free(fp);
    return s;
}

/* Checks the model's logits width and computes the fingerprint of its
 * vocabulary into `out`; false with a message in `err` on failure. */
static bool model_fingerprint(const struct llama_vocab *vocab, int32_t n_vocab, uint8_t *out, char *err,
                              size_t err_len) {
    if (n_vocab <= 0) {
        set_error(err, err_len, "n_vocab must be positive");
        return false;
    }
    return tooldec_llama_vocab_fingerprint(vocab, out, err, err_len) == TOOLDEC_OK;
}

/* The sampler around `matcher` or `pending` (taken over). */
static struct llama_sampler *sampler_of(tooldec_matcher *matcher, tooldec_pending_matcher *pending,
                                        const char *entry, int32_t n_vocab, char *err, size_t err_len) {
    struct tooldec_llama_ctx *ctx = new_ctx(matcher, pending, entry, n_vocab);
    if (!ctx) {
        set_error(err, err_len, "out of memory");
        return NULL;
    }
    return llama_sampler_init(&tooldec_llama_iface, ctx);
}

struct llama_sampler *tooldec_llama_sampler_init(const tooldec_artifact *artifact,
                                                 const struct llama_vocab *vocab,
                                                 const char *entry,
                                                 const uint32_t *budget,
                                                 size_t rollback,
                                                 int32_t n_vocab,
                                                 char *err,
                                                 size_t err_len) {
    uint8_t fingerprint[TOOLDEC_FINGERPRINT_BYTES];
    if (!model_fingerprint(vocab, n_vocab, fingerprint, err, err_len) ||
        tooldec_artifact_check_vocabulary(artifact, fingerprint, err, err_len) != TOOLDEC_OK) {
        return NULL;
    }
    if (tooldec_artifact_check_mask_width(artifact, (size_t)n_vocab, err, err_len) != TOOLDEC_OK) {
        return NULL;
    }
    tooldec_matcher *m = NULL;
    if (tooldec_matcher_new(artifact, entry, budget, rollback, &m, err, err_len) != TOOLDEC_OK) {
        return NULL;
    }
    return sampler_of(m, NULL, entry, n_vocab, err, err_len);
}

struct llama_sampler *tooldec_llama_sampler_init_pending(const tooldec_pending *pending,
                                                         const struct llama_vocab *vocab,
                                                         const char *entry,
                                                         const uint32_t *budget,
                                                         size_t rollback,
                                                         int32_t n_vocab,
                                                         char *err,
                                                         size_t err_len) {
    if (!pending) {
        set_error(err, err_len, "pending is NULL");
        return NULL;
    }
    uint8_t fingerprint[TOOLDEC_FINGERPRINT_BYTES];
    if (!model_fingerprint(vocab, n_vocab, fingerprint, err, err_len) ||
        tooldec_pending_check_vocabulary(pending, fingerprint, err, err_len) != TOOLDEC_OK ||
        tooldec_pending_check_mask_width(pending, (size_t)n_vocab, err, err_len) != TOOLDEC_OK) {
        return NULL;
    }
    tooldec_pending_matcher *m = NULL;
    if (tooldec_pending_matcher_new(pending, entry, budget, rollback, &m, err, err_len) != TOOLDEC_OK) {
        return NULL;
    }
    return sampler_of(NULL, m, entry, n_vocab, err, err_len);
}

tooldec_matcher *tooldec_llama_sampler_matcher(struct llama_sampler *smpl) {
    if (!smpl || smpl->iface != &tooldec_llama_iface || !smpl->ctx) {
        return NULL;
    }
    return ((struct tooldec_llama_ctx *)smpl->ctx)->matcher;
}

tooldec_pending_matcher *tooldec_llama_sampler_pending_matcher(struct llama_sampler *smpl) {
    if (!smpl || smpl->iface != &tooldec_llama_iface || !smpl->ctx) {
        return NULL;
    }
    return ((struct tooldec_llama_ctx *)smpl->ctx)->pending;
}

bool tooldec_llama_sampler_failed(const struct llama_sampler *smpl) {
    if (!smpl || smpl->iface != &tooldec_llama_iface || !smpl->ctx) {
        return false;
    }
    return ((const struct tooldec_llama_ctx *)smpl->ctx)->failed;
}
