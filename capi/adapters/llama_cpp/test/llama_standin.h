/*
 * llama_standin.h: a stand-in for the part of llama.cpp's include/llama.h
 * that a custom sampler touches, so the tooldec sampler can be compiled
 * and driven here without building llama.cpp.
 *
 * Matched against ggml-org/llama.cpp include/llama.h at commit
 * 0011438e931ec7fd258433f61d411301a759fae2 and src/llama-sampler.cpp at
 * commit 00efb3e184262872916bf136b3df63c1822a19bd (the sampler interface
 * after "sampling : add support for backend sampling", PR #17004, which
 * appended the four backend_* members to struct llama_sampler_i). The
 * declarations below are written anew, member for member in the same
 * order and types, so that a sampler compiled against this header has the
 * layout it has against llama.h. The ggml types the backend hooks mention
 * are opaque here, as a CPU sampler never dereferences them.
 *
 * Beyond llama.h: standin_sample(), which does what llama_sampler_sample()
 * does once it has the logits of one output (llama.cpp reads them from a
 * llama_context; here the caller passes them).
 */

#ifndef LLAMA_STANDIN_H
#define LLAMA_STANDIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LLAMA_API
#define LLAMA_DEFAULT_SEED 0xFFFFFFFF
#define LLAMA_TOKEN_NULL -1

typedef int32_t llama_token;

/* ggml, opaque. */
struct ggml_tensor;
struct ggml_context;
struct ggml_cgraph;
typedef struct ggml_backend_buffer_type *ggml_backend_buffer_type_t;

/* One candidate: its id, its logit, its probability. */
typedef struct llama_token_data {
    llama_token id;
    float logit;
    float p;
} llama_token_data;

/* The candidates a sampler works on. `selected` indexes `data` (not an
 * id); `sorted` says whether `data` is in descending logit order. */
typedef struct llama_token_data_array {
    llama_token_data *data;
    size_t size;
    int64_t selected;
    bool sorted;
} llama_token_data_array;

typedef void *llama_sampler_context_t;

struct llama_sampler;

/* What backend sampling hands a sampler's backend_apply. */
struct llama_sampler_data {
    struct ggml_tensor *logits;
    struct ggml_tensor *probs;
    struct ggml_tensor *sampled;
    struct ggml_tensor *candidates;
};

/* A sampler's operations. name, accept, reset may be NULL; apply is
 * required; clone and free may be NULL when ctx is NULL. The backend_*
 * members (experimental backend sampling) may be NULL: the sampler then
 * runs on the CPU. */
struct llama_sampler_i {
    const char *(*name)(const struct llama_sampler *smpl);
    void (*accept)(struct llama_sampler *smpl, llama_token token);
    void (*apply)(struct llama_sampler *smpl, llama_token_data_array *cur_p);
    void (*reset)(struct llama_sampler *smpl);
    struct llama_sampler *(*clone)(const struct llama_sampler *smpl);
    void (*free)(struct llama_sampler *smpl);

    bool (*backend_init)(struct llama_sampler *smpl, ggml_backend_buffer_type_t buft);
    void (*backend_accept)(struct llama_sampler *smpl,
                           struct ggml_context *ctx,
                           struct ggml_cgraph *gf,
                           struct ggml_tensor *selected_token);
    void (*backend_apply)(struct llama_sampler *smpl,
                          struct ggml_context *ctx,
                          struct ggml_cgraph *gf,
                          struct llama_sampler_data *data);
    void (*backend_set_input)(struct llama_sampler *smpl);
};

struct llama_sampler {
    struct llama_sampler_i *iface;
    llama_sampler_context_t ctx;
};

typedef struct llama_sampler_chain_params {
    bool no_perf;
} llama_sampler_chain_params;

LLAMA_API struct llama_sampler *llama_sampler_init(struct llama_sampler_i *iface,
                                                   llama_sampler_context_t ctx);
LLAMA_API const char *llama_sampler_name(const struct llama_sampler *smpl);
LLAMA_API void llama_sampler_accept(struct llama_sampler *smpl, llama_token token);
LLAMA_API void llama_sampler_apply(struct llama_sampler *smpl, llama_token_data_array *cur_p);
LLAMA_API void llama_sampler_reset(struct llama_sampler *smpl);
LLAMA_API struct llama_sampler *llama_sampler_clone(const struct llama_sampler *smpl);
LLAMA_API void llama_sampler_free(struct llama_sampler *smpl);

LLAMA_API struct llama_sampler_chain_params llama_sampler_chain_default_params(void);
LLAMA_API struct llama_sampler *llama_sampler_chain_init(struct llama_sampler_chain_params params);
LLAMA_API void llama_sampler_chain_add(struct llama_sampler *chain, struct llama_sampler *smpl);
LLAMA_API struct llama_sampler *llama_sampler_chain_get(struct llama_sampler *chain, int32_t i);
LLAMA_API int llama_sampler_chain_n(const struct llama_sampler *chain);

LLAMA_API struct llama_sampler *llama_sampler_init_greedy(void);
LLAMA_API struct llama_sampler *llama_sampler_init_dist(uint32_t seed);

/* Stand-in only: llama_sampler_sample() for one output whose `n_vocab`
 * logits are given: builds the candidate array (id i, logit logits[i],
 * p 0, selected -1, unsorted), applies `smpl`, takes the selected
 * candidate's id, accepts it, and returns it. Aborts if nothing was
 * selected, as llama.cpp's GGML_ASSERT does. */
llama_token standin_sample(struct llama_sampler *smpl, const float *logits, int32_t n_vocab);

#ifdef __cplusplus
}
#endif

#endif /* LLAMA_STANDIN_H */
