/*
 * tooldec_llama_sampler.h: tooldec as a llama.cpp sampler (struct
 * llama_sampler_i), for a llama_sampler_chain.
 *
 *   struct llama_sampler *chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
 *   const struct llama_vocab *vocab = llama_model_get_vocab(model);
 *   llama_sampler_chain_add(chain, tooldec_llama_sampler_init(artifact, vocab, NULL, NULL, 0,
 *                                                             llama_vocab_n_tokens(vocab), err, sizeof err));
 *   llama_sampler_chain_add(chain, llama_sampler_init_dist(seed));   // or _greedy()
 *   ...
 *   llama_token t = llama_sampler_sample(chain, ctx, -1);            // apply, pick, accept
 *
 * apply() sets the logit of every candidate the grammar does not allow to
 * -INFINITY (the way llama.cpp's own grammar sampler masks), looking at
 * each candidate's id, so it works on the full vocabulary and on a reduced
 * candidate list alike; accept() advances the matcher by the chosen token;
 * reset() restarts it (at the entry it was created at, with its budget);
 * clone() copies its state. Put it first in the chain, before top-k /
 * top-p / temperature, so that later samplers only see allowed tokens.
 *
 * Tested in llama.cpp @0c1e570 on a GGUF model (test/real.c, run by
 * python/test-engines.sh) and against a stand-in of its sampler interface
 * (test/llama_standin.h); see the README.
 *
 * Thread safety: a sampler belongs to one sequence, like every llama.cpp
 * sampler; the artifact may be shared by many samplers on many threads.
 */

#ifndef TOOLDEC_LLAMA_SAMPLER_H
#define TOOLDEC_LLAMA_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tooldec.h"

#ifdef TOOLDEC_LLAMA_STANDIN
#include "llama_standin.h"
#else
#include "llama.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Creates a sampler that keeps only the tokens the artifact's grammar
 * allows, after checking that the artifact was compiled for the model's
 * vocabulary `vocab`: its fingerprint is computed from llama.cpp's view of
 * the tokens (tooldec_llama_vocab_fingerprint) and compared with the
 * artifact's; a mismatch is refused with the runtime's message (the
 * artifact's vocabulary and both fingerprints). Compile the artifact from
 * the model's GGUF file (tooldec-compile --tokenizer model.gguf): its token
 * list is what llama.cpp serves, padding tokens included. `entry` (NULL: the default entry) and `budget` (NULL: the
 * artifact's default) are those of tooldec_matcher_new; `rollback` is the
 * matcher's rollback capacity (0 unless the caller rolls back through
 * tooldec_llama_sampler_matcher). `n_vocab` is the model's logits size
 * (llama_vocab_n_tokens): it must be at least the artifact's mask width;
 * ids the artifact does not know are never allowed.
 *
 * Returns NULL on failure, with a message in `err` (`err_len` bytes; may
 * be NULL). The sampler keeps its own reference to the artifact: the
 * artifact handle may be freed afterwards. Free the sampler with
 * llama_sampler_free, or let the chain that owns it do so.
 */
struct llama_sampler *tooldec_llama_sampler_init(const tooldec_artifact *artifact,
                                                 const struct llama_vocab *vocab,
                                                 const char *entry,
                                                 const uint32_t *budget,
                                                 size_t rollback,
                                                 int32_t n_vocab,
                                                 char *err,
                                                 size_t err_len);

/*
 * The same sampler over a compile that is still running
 * (tooldec_compiler_start): for a request that brings its own tools, so
 * that sampling starts about a millisecond after the request instead of
 * after the whole compile. Its masks are computed on demand from the
 * grammar until the artifact lands (each equal to the artifact's), then
 * the artifact's. Early masks need every byte the grammar takes to be a
 * token of its own (GPT-2, Llama-3, Qwen2.5; not SmolLM2, which lacks
 * some): otherwise, and under a budget too tight to tell early, a step
 * waits for the artifact. It takes tooldec_pending_matcher_new's
 * arguments and checks the vocabulary and width against the compile's
 * (tooldec_pending_check_vocabulary, tooldec_pending_check_mask_width). reset()
 * goes back to `entry`. A budget below the shortest call is refused here
 * (finding it runs the compile). If the rest of the compile fails after
 * sampling started (the state bound), apply() allows nothing and accept()
 * marks the sampler failed, the compile's message on its matcher. The
 * sampler keeps its own reference to the compile: the pending handle may
 * be freed afterwards.
 */
struct llama_sampler *tooldec_llama_sampler_init_pending(const tooldec_pending *pending,
                                                         const struct llama_vocab *vocab,
                                                         const char *entry,
                                                         const uint32_t *budget,
                                                         size_t rollback,
                                                         int32_t n_vocab,
                                                         char *err,
                                                         size_t err_len);

/*
 * The vocabulary fingerprint of `vocab` as tooldec defines it
 * (runtime/FORMAT.md), into `out` (TOOLDEC_FINGERPRINT_BYTES bytes): per
 * token id, an unused token (LLAMA_TOKEN_ATTR_UNUSED) as unused; an
 * unknown or control token as a special token named by its text; any
 * other token as text, its bytes being llama_token_to_piece's (the byte of
 * a byte token, a space for SentencePiece's U+2581, the bytes of a
 * byte-level BPE token, a user-defined token's text as it stands). That is how tooldec-compile reads the
 * GGUF's token types. TOOLDEC_OK, or a status with a message in `err`.
 */
tooldec_status tooldec_llama_vocab_fingerprint(const struct llama_vocab *vocab,
                                               uint8_t *out,
                                               char *err,
                                               size_t err_len);

/*
 * The matcher inside a sampler made by tooldec_llama_sampler_init (owned
 * by the sampler): for is_terminated, forced bytes (jump-forward),
 * rollback after rejected speculative tokens, last_error. NULL for any
 * other sampler.
 */
tooldec_matcher *tooldec_llama_sampler_matcher(struct llama_sampler *smpl);

/*
 * The pending matcher inside a sampler made by
 * tooldec_llama_sampler_init_pending (owned by the sampler); NULL for any
 * other sampler, and tooldec_llama_sampler_matcher is NULL for this one.
 */
tooldec_pending_matcher *tooldec_llama_sampler_pending_matcher(struct llama_sampler *smpl);

/*
 * Whether accept() was given a token the grammar does not allow since the
 * sampler was created or reset (the matcher ignored it; its last_error
 * says which). llama.cpp's accept() cannot return an error. Do not feed
 * prompt tokens to a chain that holds this sampler.
 */
bool tooldec_llama_sampler_failed(const struct llama_sampler *smpl);

#ifdef __cplusplus
}
#endif

#endif /* TOOLDEC_LLAMA_SAMPLER_H */
