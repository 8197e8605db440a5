/*
 * llama_standin.c: the sampler machinery of llama.cpp (src/llama-sampler.cpp
 * at commit 00efb3e184262872916bf136b3df63c1822a19bd), re-implemented in C
 * for the stand-in: llama_sampler_init and the llama_sampler_* wrappers
 * with the same NULL handling, the chain (apply and accept run every
 * sampler in order; clone clones each; free frees each), greedy (the first
 * highest logit), dist (softmax, then a draw; llama.cpp draws from
 * std::mt19937, this from SplitMix64, so the same seed picks differently)
 * and standin_sample, the CPU path of llama_sampler_sample. Backend
 * sampling is not modelled: as in llama.cpp without it, every sampler runs
 * on the CPU. The vocabulary is a token list (standin_vocab_load), with the
 * llama_token_to_piece contract of src/llama-vocab.cpp at the same commit:
 * unknown and control tokens render only when `special`, the piece is not
 * NUL-terminated, a short buffer gets minus the length needed.
 */

#include "llama_standin.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void standin_abort(const char *why) {
    fprintf(stderr, "llama stand-in: %s\n", why);
    abort();
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        standin_abort("out of memory");
    }
    return p;
}

/* ---- llama_sampler API ---- */

struct llama_sampler *llama_sampler_init(struct llama_sampler_i *iface, llama_sampler_context_t ctx) {
    struct llama_sampler *s = xmalloc(sizeof *s);
    s->iface = iface;
    s->ctx = ctx;
    return s;
}

const char *llama_sampler_name(const struct llama_sampler *smpl) {
    if (!smpl->iface) {
        return "(null)";
    }
    return smpl->iface->name(smpl);
}

void llama_sampler_accept(struct llama_sampler *smpl, llama_token token) {
    if (!smpl) {
        return;
    }
    if (smpl->iface->accept) {
        smpl->iface->accept(smpl, token);
    }
}

void llama_sampler_apply(struct llama_sampler *smpl, llama_token_data_array *cur_p) {
    if (!smpl) {
        return;
    }
    if (!smpl->iface->apply) {
        standin_abort("GGML_ASSERT(smpl->iface->apply) failed");
    }
    smpl->iface->apply(smpl, cur_p);
}

void llama_sampler_reset(struct llama_sampler *smpl) {
    if (!smpl) {
        return;
    }
    if (smpl->iface->reset) {
        smpl->iface->reset(smpl);
    }
}

struct llama_sampler *llama_sampler_clone(const struct llama_sampler *smpl) {
    if (!smpl) {
        return NULL;
    }
    if (smpl->iface->clone) {
        return smpl->iface->clone(smpl);
    }
    if (smpl->ctx == NULL) {
        return llama_sampler_init(smpl->iface, NULL);
    }
    standin_abort("the sampler does not support cloning");
    return NULL;
}

void llama_sampler_free(struct llama_sampler *smpl) {
    if (smpl == NULL) {
        return;
    }
    if (smpl->iface->free) {
        smpl->iface->free(smpl);
    }
    free(smpl);
}

/* ---- chain ---- */

struct chain {
    struct llama_sampler_chain_params params;
    struct llama_sampler **samplers;
    size_t n, cap;
};

static const char *chain_name(const struct llama_sampler *smpl) {
    (void)smpl;
    return "chain";
}

static void chain_accept(struct llama_sampler *smpl, llama_token token) {
    struct chain *c = smpl->ctx;
    for (size_t i = 0; i < c->n; i++) {
        llama_sampler_accept(c->samplers[i], token);
    }
}

static void chain_apply(struct llama_sampler *smpl, llama_token_data_array *cur_p) {
    struct chain *c = smpl->ctx;
    for (size_t i = 0; i < c->n; i++) {
        if (c->samplers[i]->iface->apply == NULL) {
            continue;
        }
        llama_sampler_apply(c->samplers[i], cur_p);
    }
}

static void chain_reset(struct llama_sampler *smpl) {
    struct chain *c = smpl->ctx;
    for (size_t i = 0; i < c->n; i++) {
        llama_sampler_reset(c->samplers[i]);
    }
}

static struct llama_sampler *chain_clone(const struct llama_sampler *smpl);

static void chain_free(struct llama_sampler *smpl) {
    struct chain *c = smpl->ctx;
    for (size_t i = 0; i < c->n; i++) {
        llama_sampler_free(c->samplers[i]);
    }
    free(c->samplers);
    free(c);
}

static struct llama_sampler_i chain_iface = {
    .name = chain_name,
    .accept = chain_accept,
    .apply = chain_apply,
    .reset = chain_reset,
    .clone = chain_clone,
    .free = chain_free,
};

struct llama_sampler_chain_params llama_sampler_chain_default_params(void) {
    struct llama_sampler_chain_params p = {.no_perf = true};
    return p;
}

struct llama_sampler *llama_sampler_chain_init(struct llama_sampler_chain_params params) {
    struct chain *c = xmalloc(sizeof *c);
    c->params = params;
    c->samplers = NULL;
    c->n = c->cap = 0;
    return llama_sampler_init(&chain_iface, c);
}

void llama_sampler_chain_add(struct llama_sampler *chain, struct llama_sampler *smpl) {
    struct chain *c = chain->ctx;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 4;
        struct llama_sampler **grown = realloc(c->samplers, c->cap * sizeof *grown);
        if (!grown) {
            standin_abort("out of memory");
        }
        c->samplers = grown;
    }
    c->samplers[c->n++] = smpl;
}

static struct llama_sampler *chain_clone(const struct llama_sampler *smpl) {
    const struct chain *src = smpl->ctx;
    struct llama_sampler *result = llama_sampler_chain_init(src->params);
    for (size_t i = 0; i < src->n; i++) {
        llama_sampler_chain_add(result, llama_sampler_clone(src->samplers[i]));
    }
    return result;
}

struct llama_sampler *llama_sampler_chain_get(struct llama_sampler *chain, int32_t i) {
    if (chain == NULL || chain->iface != &chain_iface) {
        return NULL;
    }
    if (i == -1) {
        return chain;
    }
    const struct chain *c = chain->ctx;
    if (i < 0 || (size_t)i >= c->n) {
        return NULL;
    }
    return c->samplers[i];
}

int llama_sampler_chain_n(const struct llama_sampler *chain) {
    return (int)((const struct chain *)chain->ctx)->n;
}

/* ---- greedy ---- */

static const char *greedy_name(const struct llama_sampler *smpl) {
    (void)smpl;
    return "greedy";
}

static void greedy_apply(struct llama_sampler *smpl, llama_token_data_array *cur_p) {
    (void)smpl;
    cur_p->selected = 0;
    for (size_t i = 1; i < cur_p->size; ++i) {
        if (cur_p->data[i].logit > cur_p->data[cur_p->selected].logit) {
            cur_p->selected = (int64_t)i;
        }
    }
}

static struct llama_sampler_i greedy_iface = {
    .name = greedy_name,
    .accept = NULL,
    .apply = greedy_apply,
    .reset = NULL,
    .clone = NULL,
    .free = NULL,
};

struct llama_sampler *llama_sampler_init_greedy(void) {
    return llama_sampler_init(&greedy_iface, NULL);
}

/* ---- dist ---- */

struct dist {
    uint32_t seed;
    uint64_t state;
};

static double dist_uniform(struct dist *d) {
    uint64_t z = (d->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0; /* [0, 1) */
}

static const char *dist_name(const struct llama_sampler *smpl) {
    (void)smpl;
    return "dist";
}

static void dist_apply(struct llama_sampler *smpl, llama_token_data_array *cur_p) {
    struct dist *d = smpl->ctx;
    if (cur_p->size == 0) {
        cur_p->selected = -1;
        return;
    }
    cur_p->selected = 0;
    if (cur_p->size == 1) {
        cur_p->data[0].p = 1.0f;
        return;
    }
    float max_l = cur_p->data[0].logit;
    if (!cur_p->sorted) {
        for (size_t i = 1; i < cur_p->size; ++i) {
            max_l = fmaxf(max_l, cur_p->data[i].logit);
        }
    }
    double sum_cum = 0.0;
    for (size_t i = 0; i < cur_p->size; ++i) {
        float p = expf(cur_p->data[i].logit - max_l);
        cur_p->data[i].p = p;
        sum_cum += p;
    }
    const double rnd = dist_uniform(d);
    double sum_run = 0.0;
    const double sum_tgt = sum_cum * rnd;
    bool found = false;
    for (size_t i = 0; i < cur_p->size; ++i) {
        if (!found) {
            sum_run += cur_p->data[i].p;
            if (sum_run >= sum_tgt) {
                cur_p->selected = (int64_t)i;
                found = true;
            }
        }
        cur_p->data[i].p = (float)(cur_p->data[i].p / sum_cum);
    }
    if (!found) {
        cur_p->selected = (int64_t)cur_p->size - 1;
    }
}

static void dist_reset(struct llama_sampler *smpl) {
    struct dist *d = smpl->ctx;
    d->state = d->seed;
}

static struct llama_sampler *dist_clone(const struct llama_sampler *smpl) {
    const struct dist *d = smpl->ctx;
    struct llama_sampler *result = llama_sampler_init_dist(d->seed);
    ((struct dist *)result->ctx)->state = d->state;
    return result;
}

static void dist_free(struct llama_sampler *smpl) {
    free(smpl->ctx);
}

static struct llama_sampler_i dist_iface = {
    .name = dist_name,
    .accept = NULL,
    .apply = dist_apply,
    .reset = dist_reset,
    .clone = dist_clone,
    .free = dist_free,
};

struct llama_sampler *llama_sampler_init_dist(uint32_t seed) {
    struct dist *d = xmalloc(sizeof *d);
    d->seed = seed;
    d->state = seed;
    return llama_sampler_init(&dist_iface, d);
}

/* ---- llama_sampler_sample ---- */

llama_token standin_sample(struct llama_sampler *smpl, const float *logits, int32_t n_vocab) {
    llama_token_data *cur = xmalloc((size_t)n_vocab * sizeof *cur);
    for (llama_token id = 0; id < n_vocab; id++) {
        cur[id].id = id;
        cur[id].logit = logits[id];
        cur[id].p = 0.0f;
    }
    llama_token_data_array cur_p = {
        .data = cur,
        .size = (size_t)n_vocab,
        .selected = -1,
        .sorted = false,
    };
    llama_sampler_apply(smpl, &cur_p);
    if (!(cur_p.selected >= 0 && cur_p.selected < (int64_t)cur_p.size)) {
        standin_abort("GGML_ASSERT(cur_p.selected >= 0 && cur_p.selected < (int32_t) cur_p.size) failed");
    }
    llama_token token = cur_p.data[cur_p.selected].id;
    free(cur);
    llama_sampler_accept(smpl, token);
    return token;
}

/* ---- vocabulary ---- */

struct standin_token {
    enum llama_token_attr attr;
    char *piece;
    int32_t len;
};

struct llama_vocab {
    struct standin_token *tokens;
    int32_t n;
};

static bool read_u32(FILE *f, uint32_t *v) {
    unsigned char b[4];
    if (fread(b, 1, 4, f) != 4) {
        return false;
    }
    *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return true;
}

struct llama_vocab *standin_vocab_load(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    uint32_t n = 0;
    struct llama_vocab *v = NULL;
    if (!read_u32(f, &n) || n > INT32_MAX / 2) {
        goto fail;
    }
    v = xmalloc(sizeof *v);
    v->n = 0;
    v->tokens = xmalloc((size_t)n * sizeof *v->tokens);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t attr, len;
        if (!read_u32(f, &attr) || !read_u32(f, &len) || len > 1u << 20) {
            goto fail;
        }
        struct standin_token *t = &v->tokens[i];
        t->attr = (enum llama_token_attr)attr;
        t->len = (int32_t)len;
        t->piece = xmalloc(len);
        v->n = (int32_t)i + 1;
        if (len > 0 && fread(t->piece, 1, len, f) != len) {
            goto fail;
        }
    }
    fclose(f);
    return v;
fail:
    fclose(f);
    standin_vocab_free(v);
    return NULL;
}

void standin_vocab_free(struct llama_vocab *vocab) {
    if (!vocab) {
        return;
    }
    for (int32_t i = 0; i < vocab->n; i++) {
        free(vocab->tokens[i].piece);
    }
    free(vocab->tokens);
    free(vocab);
}

int32_t llama_vocab_n_tokens(const struct llama_vocab *vocab) {
    return vocab->n;
}

enum llama_token_attr llama_vocab_get_attr(const struct llama_vocab *vocab, llama_token token) {
    if (token < 0 || token >= vocab->n) {
        standin_abort("GGML_ASSERT(type != LLAMA_VOCAB_TYPE_NONE) / id_to_token.at(id) out of range");
    }
    return vocab->tokens[token].attr;
}

int32_t llama_token_to_piece(const struct llama_vocab *vocab,
                             llama_token token,
                             char *buf,
                             int32_t length,
                             int32_t lstrip,
                             bool special) {
    if (token < 0 || token >= vocab->n) {
        return 0;
    }
    const struct standin_token *t = &vocab->tokens[token];
    if (!special && (t->attr & (LLAMA_TOKEN_ATTR_UNKNOWN | LLAMA_TOKEN_ATTR_CONTROL))) {
        return 0;
    }
    const char *p = t->piece;
    int32_t n = t->len;
    while (lstrip > 0 && n > 0 && *p == ' ') {
        p++;
        n--;
        lstrip--;
    }
    if (n > length) {
        return -n;
    }
    if (n > 0) {
        memcpy(buf, p, (size_t)n);
    }
    return n;
}
