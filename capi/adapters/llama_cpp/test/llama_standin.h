/*
 * llama_standin.h: a stand-in for the part of llama.cpp's include/llama.h
 * that a custom sampler touches, so the tooldec sampler can be compiled
 * and driven here without building llama.cpp.
 *
 * Matched against ggml-org/llama.cpp include/llama.h at commit
 * 0c1e57098bba43ac29e6e3b677cdceebdd22334f (the llama.cpp vendored by
 * llama-cpp-python 0.3.36), whose struct llama_sampler_i has twelve
 * members: backend_init takes n_outputs_max_per_seq, and backend_reset and
 * copy_state follow backend_set_input (earlier: llama.h @0011438e and
 * src/llama-sampler.cpp @00efb3e1, after PR #17004's four backend_*
 * members). The
 * declarations below are written anew, member for member in the same
 * order and types, so that a sampler compiled against this header has the
 * layout it has against llama.h. The ggml types the backend hooks mention
 * are opaque here, as a CPU sampler never dereferences them.
 *
 * The vocabulary functions the sampler reads (llama_vocab_n_tokens,
 * llama_vocab_get_attr, llama_token_to_piece) and enum llama_token_attr are
 * matched against the same llama.h (its "Vocab" and "Tokenization"
 * sections); struct llama_vocab stays opaque, as there.
 *
 * Beyond llama.h: standin_sample(), which does what llama_sampler_sample()
 * does once it has the logits of one output (llama.cpp reads them from a
 * llama_context; here the caller passes them), and standin_vocab_load(),
 * which makes a vocabulary from a token list instead of a GGUF file.
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

/* A model's vocabulary, opaque (llama_model_get_vocab gives it). */
struct llama_vocab;

/* Token attributes, a bit set (llama.cpp sets them from the GGUF token
 * types: normal, unknown, control, user-defined, unused, byte). */
enum llama_token_attr {
    LLAMA_TOKEN_ATTR_UNDEFINED = 0,
    LLAMA_TOKEN_ATTR_UNKNOWN = 1 << 0,
    LLAMA_TOKEN_ATTR_UNUSED = 1 << 1,
    LLAMA_TOKEN_ATTR_NORMAL = 1 << 2,
    LLAMA_TOKEN_ATTR_CONTROL = 1 << 3,
    LLAMA_TOKEN_ATTR_USER_DEFINED = 1 << 4,
    LLAMA_TOKEN_ATTR_BYTE = 1 << 5,
    LLAMA_TOKEN_ATTR_NORMALIZED = 1 << 6,
    LLAMA_TOKEN_ATTR_LSTRIP = 1 << 7,
    LLAMA_TOKEN_ATTR_RSTRIP = 1 << 8,
    LLAMA_TOKEN_ATTR_SINGLE_WORD = 1 << 9,
};

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

    bool (*backend_init)(struct llama_sampler *smpl,
                         ggml_backend_buffer_type_t buft,
                         uint32_t n_outputs_max_per_seq);
    void (*backend_accept)(struct llama_sampler *smpl,
                           struct ggml_context *ctx,
                           struct ggml_cgraph *gf,
                           struct ggml_tensor *selected_token);
    void (*backend_apply)(struct llama_sampler *smpl,
                          struct ggml_context *ctx,
                          struct ggml_cgraph *gf,
                          struct llama_sampler_data *data);
    void (*backend_set_input)(struct llama_sampler *smpl);
    /* Before a sampling graph is rebuilt. */
    void (*backend_reset)(struct llama_sampler *smpl);
    /* Copies src's state into dst (same type and configuration); NULL:
     * llama_sampler_copy clones instead. */
    void (*copy_state)(const struct llama_sampler *src, struct llama_sampler *dst);
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

LLAMA_API int32_t llama_vocab_n_tokens(const struct llama_vocab *vocab);
LLAMA_API enum llama_token_attr llama_vocab_get_attr(const struct llama_vocab *vocab, llama_token token);

/* Token id -> piece: the token's bytes as decoded text (a byte token its
 * byte; control and unknown tokens their text only when `special`).
 * Writes no NUL; returns the length, or minus the length needed when
 * `length` is too small; skips up to `lstrip` leading spaces. */
LLAMA_API int32_t llama_token_to_piece(const struct llama_vocab *vocab,
                                       llama_token token,
                                       char *buf,
                                       int32_t length,
                                       int32_t lstrip,
                                       bool special);

/* Stand-in only: a vocabulary read from `path`, a token list: a
 * little-endian uint32 count, then per token its attributes and the
 * length of its piece (uint32 each, little-endian) and the piece's bytes
 * (what llama_token_to_piece with special = true gives). NULL if the file
 * cannot be read or is malformed. */
struct llama_vocab *standin_vocab_load(const char *path);
void standin_vocab_free(struct llama_vocab *vocab);

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
