/*
 * walk.c: drives the tooldec C ABI from a script and reports every result,
 * one line per operation, for tests/c_walk.rs to compare with the Rust API.
 *
 *   walk ARTIFACT SCRIPT
 *   walk --compile TOOLS OPTIONS OUT SCRIPT
 *
 * The second form compiles the tool list in the file TOOLS in the process
 * (tooldec_compiler_gpt2, then tooldec_compiler_compile with the options
 * JSON in the file OPTIONS), frees the compiler, writes the artifact's
 * payload to OUT (which the errors and orphan operations reopen, and the
 * test compares with the Rust compiler's bytes) and runs the script on the
 * compiled artifact.
 *
 * The script is whitespace-separated words. Matchers live in numbered
 * slots. Operations (and what they print):
 *
 *   info                      info vocab=V words=W tokens=N eos=E,.. min=M max=X entries=a,b fp=HEX meta=LEN
 *   bytes T                   bytes STATUS HEX|-
 *   new S ENTRY|- BUDGET|- R  new STATUS [| message]
 *   clone D S                 clone STATUS
 *   free S                    free
 *   mask S WORDS              mask 0 HASH POPCOUNT clean=1 guard=1 | mask STATUS untouched=U | message
 *   batch STRIDE ROW N S..    batch 0 HASH.. gaps=G clean=C | batch STATUS untouched=U | message
 *   accept S T                accept STATUS [| message]
 *   accepts S N T..           accepts STATUS COUNT [| message]
 *   validate S N T..          validate STATUS COUNT
 *   allowed S T               allowed 0|1
 *   rollback S N              rollback STATUS [| message]
 *   forced S CAP              forced STATUS LEN HEX|-
 *   query S                   query acc=A term=T left=L|none depth=D cap=C
 *   reset S                   reset STATUS
 *   reset_to S ENTRY          reset_to STATUS [| message]
 *   budget S N|-              budget STATUS [| message]
 *   orphan                    orphan STATUS HASH   (a matcher used after its artifact handle was freed)
 *   errors                    e NAME ... lines: the error paths, NULL handles included
 *   compile_errors            ce NAME ... lines: the compiler's error paths, its cache, NULL handles
 *
 * HASH is FNV-1a (64-bit) over the 32-bit words, each word XORed in whole.
 * "clean" says that no bit at or beyond the tokenizer's token count is set
 * (padding ids never allowed); "guard" that nothing was written past the
 * buffer; "gaps" that the words between batch rows were not touched.
 */

#include "tooldec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 8
#define SENTINEL 0xA5A5A5A5u
#define GUARD 4

static const char *artifact_path;
static tooldec_artifact *art;
static tooldec_matcher *slot[SLOTS];
static size_t n_tokens;

static void die(const char *what) {
    fprintf(stderr, "walk: %s\n", what);
    exit(2);
}

/* The whole file at `path`, NUL-terminated (not counted in *len). */
static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        die("cannot open an input file");
    }
    char *data = NULL;
    size_t n = 0, cap = 0, got;
    do {
        if (n + 1 >= cap) {
            cap = cap ? 2 * cap : 65536;
            data = realloc(data, cap);
            if (!data) {
                die("out of memory");
            }
        }
        got = fread(data + n, 1, cap - n - 1, f);
        n += got;
    } while (got > 0);
    fclose(f);
    data[n] = 0;
    *len = n;
    return data;
}

static uint64_t fnv(const uint32_t *w, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= w[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static unsigned popcount(const uint32_t *w, size_t n) {
    unsigned c = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t x = w[i];
        while (x) {
            x &= x - 1;
            c++;
        }
    }
    return c;
}

/* No bit at or beyond the token count is set in these words. */
static int clean(const uint32_t *w, size_t words) {
    for (size_t t = n_tokens; t < words * 32; t++) {
        if (w[t / 32] >> (t % 32) & 1u) {
            return 0;
        }
    }
    return 1;
}

static int all_sentinel(const uint32_t *w, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (w[i] != SENTINEL) {
            return 0;
        }
    }
    return 1;
}

/* ---- script reading ---- */

static FILE *script;

static int word(char *buf, size_t cap) {
    int c;
    size_t n = 0;
    do {
        c = fgetc(script);
    } while (c == ' ' || c == '\n' || c == '\t' || c == '\r');
    if (c == EOF) {
        return 0;
    }
    while (c != EOF && c != ' ' && c != '\n' && c != '\t' && c != '\r') {
        if (n + 1 < cap) {
            buf[n++] = (char)c;
        }
        c = fgetc(script);
    }
    buf[n] = 0;
    return 1;
}

static unsigned long long number(void) {
    char buf[64];
    if (!word(buf, sizeof buf)) {
        die("script ends inside an operation");
    }
    char *end;
    unsigned long long v = strtoull(buf, &end, 10);
    if (*end) {
        die("expected a number");
    }
    return v;
}

static tooldec_matcher **slot_arg(void) {
    unsigned long long s = number();
    if (s >= SLOTS) {
        die("slot out of range");
    }
    return &slot[s];
}

static uint32_t *tokens_arg(size_t n) {
    uint32_t *t = malloc((n ? n : 1) * sizeof *t);
    if (!t) {
        die("out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        t[i] = (uint32_t)number();
    }
    return t;
}

static void message(const char *msg) {
    printf(" | %s", msg);
}

static void status_line(const char *op, tooldec_status st, tooldec_matcher *m) {
    printf("%s %d", op, (int)st);
    if (st != TOOLDEC_OK) {
        message(tooldec_matcher_last_error(m));
    }
    printf("\n");
}

static void hex(const uint8_t *b, size_t n) {
    if (n == 0) {
        printf("-");
    }
    for (size_t i = 0; i < n; i++) {
        printf("%02x", b[i]);
    }
}

/* ---- operations ---- */

static void op_info(void) {
    size_t n_eos = 0;
    const uint32_t *eos = tooldec_artifact_eos_tokens(art, &n_eos);
    printf("info vocab=%zu words=%zu tokens=%zu eos=", tooldec_artifact_mask_width(art),
           tooldec_artifact_mask_words(art), tooldec_artifact_token_count(art));
    for (size_t i = 0; i < n_eos; i++) {
        printf("%s%u", i ? "," : "", (unsigned)eos[i]);
    }
    uint32_t max = tooldec_artifact_max_tokens(art);
    printf(" min=%u max=", (unsigned)tooldec_artifact_min_tokens(art));
    if (max == TOOLDEC_NO_BUDGET) {
        printf("none");
    } else {
        printf("%u", (unsigned)max);
    }
    printf(" entries=");
    size_t n_entries = tooldec_artifact_entry_count(art);
    for (size_t i = 0; i < n_entries; i++) {
        printf("%s%s", i ? "," : "", tooldec_artifact_entry_name(art, i));
    }
    if (tooldec_artifact_entry_name(art, n_entries) != NULL) {
        die("entry_name past the end is not NULL");
    }
    uint8_t fp[TOOLDEC_FINGERPRINT_BYTES];
    if (tooldec_artifact_vocab_fingerprint(art, fp) != TOOLDEC_OK) {
        die("vocab_fingerprint failed");
    }
    printf(" fp=");
    hex(fp, sizeof fp);
    printf(" meta=%zu\n", strlen(tooldec_artifact_metadata(art)));
}

static void op_bytes(void) {
    uint32_t t = (uint32_t)number();
    const uint8_t *b = NULL;
    size_t len = 99;
    tooldec_status st = tooldec_artifact_token_bytes(art, t, &b, &len);
    printf("bytes %d ", (int)st);
    if (len > 0 && b == NULL) {
        die("token_bytes: NULL bytes with a length");
    }
    hex(b, len);
    printf("\n");
}

static void op_new(void) {
    tooldec_matcher **s = slot_arg();
    char entry[128], budget[32];
    if (!word(entry, sizeof entry) || !word(budget, sizeof budget)) {
        die("new: arguments");
    }
    size_t rollback = (size_t)number();
    uint32_t b = (uint32_t)strtoul(budget, NULL, 10);
    char err[256];
    strcpy(err, "untouched");
    tooldec_matcher_free(*s);
    *s = (tooldec_matcher *)1; /* must be overwritten, with NULL on failure */
    tooldec_status st = tooldec_matcher_new(art, strcmp(entry, "-") ? entry : NULL,
                                            strcmp(budget, "-") ? &b : NULL, rollback, s, err,
                                            sizeof err);
    printf("new %d", (int)st);
    if (st != TOOLDEC_OK) {
        if (*s != NULL) {
            die("new: failed but *out is not NULL");
        }
        message(err);
    } else if (strcmp(err, "untouched") != 0) {
        die("new: success wrote the error buffer");
    }
    printf("\n");
}

static void op_clone(void) {
    tooldec_matcher **d = slot_arg();
    tooldec_matcher **s = slot_arg();
    tooldec_matcher *copy = NULL;
    tooldec_status st = tooldec_matcher_clone(*s, &copy);
    tooldec_matcher_free(*d);
    *d = copy;
    printf("clone %d\n", (int)st);
}

static void op_free(void) {
    tooldec_matcher **s = slot_arg();
    tooldec_matcher_free(*s);
    *s = NULL;
    printf("free\n");
}

static void op_mask(void) {
    tooldec_matcher **s = slot_arg();
    size_t words = (size_t)number();
    uint32_t *buf = malloc((words + GUARD) * sizeof *buf);
    if (!buf) {
        die("out of memory");
    }
    for (size_t i = 0; i < words + GUARD; i++) {
        buf[i] = SENTINEL;
    }
    tooldec_status st = tooldec_matcher_fill_mask(*s, buf, words);
    if (st == TOOLDEC_OK) {
        printf("mask 0 %016llx %u clean=%d guard=%d\n", (unsigned long long)fnv(buf, words),
               popcount(buf, words), clean(buf, words), all_sentinel(buf + words, GUARD));
    } else {
        printf("mask %d untouched=%d", (int)st, all_sentinel(buf, words + GUARD));
        message(tooldec_matcher_last_error(*s));
        printf("\n");
    }
    free(buf);
}

static void op_batch(void) {
    size_t stride = (size_t)number();
    size_t row = (size_t)number();
    size_t n = (size_t)number();
    const tooldec_matcher **ms = malloc((n ? n : 1) * sizeof *ms);
    if (!ms) {
        die("out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        ms[i] = *slot_arg();
    }
    size_t total = (n ? (n - 1) * stride + row : 0) + GUARD;
    uint32_t *buf = malloc(total * sizeof *buf);
    if (!buf) {
        die("out of memory");
    }
    for (size_t i = 0; i < total; i++) {
        buf[i] = SENTINEL;
    }
    char err[256] = "";
    tooldec_status st = tooldec_fill_masks(ms, n, buf, stride, row, err, sizeof err);
    if (st == TOOLDEC_OK) {
        printf("batch 0");
        int gaps = 1, cl = 1;
        for (size_t i = 0; i < n; i++) {
            const uint32_t *r = buf + i * stride;
            printf(" %016llx", (unsigned long long)fnv(r, row));
            cl &= clean(r, row);
            if (i + 1 < n) {
                gaps &= all_sentinel(r + row, stride - row);
            }
        }
        gaps &= all_sentinel(buf + total - GUARD, GUARD);
        printf(" gaps=%d clean=%d\n", gaps, cl);
    } else {
        printf("batch %d untouched=%d", (int)st, all_sentinel(buf, total));
        message(err);
        printf("\n");
    }
    free(buf);
    free(ms);
}

static void op_accept(void) {
    tooldec_matcher **s = slot_arg();
    uint32_t t = (uint32_t)number();
    status_line("accept", tooldec_matcher_accept_token(*s, t), *s);
}

static void op_accepts(void) {
    tooldec_matcher **s = slot_arg();
    size_t n = (size_t)number();
    uint32_t *t = tokens_arg(n);
    size_t k = 12345;
    tooldec_status st = tooldec_matcher_accept_tokens(*s, t, n, &k);
    printf("accepts %d %zu", (int)st, k);
    if (st != TOOLDEC_OK) {
        message(tooldec_matcher_last_error(*s));
    }
    printf("\n");
    free(t);
}

static void op_validate(void) {
    tooldec_matcher **s = slot_arg();
    size_t n = (size_t)number();
    uint32_t *t = tokens_arg(n);
    size_t k = 12345;
    tooldec_status st = tooldec_matcher_validate_tokens(*s, t, n, &k);
    printf("validate %d %zu\n", (int)st, k);
    free(t);
}

static void op_allowed(void) {
    tooldec_matcher **s = slot_arg();
    uint32_t t = (uint32_t)number();
    printf("allowed %d\n", tooldec_matcher_is_allowed(*s, t) ? 1 : 0);
}

static void op_rollback(void) {
    tooldec_matcher **s = slot_arg();
    size_t n = (size_t)number();
    status_line("rollback", tooldec_matcher_rollback(*s, n), *s);
}

static void op_forced(void) {
    tooldec_matcher **s = slot_arg();
    size_t cap = (size_t)number();
    uint8_t *buf = malloc(cap ? cap : 1);
    if (!buf) {
        die("out of memory");
    }
    size_t len = 12345;
    tooldec_status st = tooldec_matcher_forced_bytes(*s, buf, cap, &len);
    printf("forced %d %zu ", (int)st, len);
    hex(buf, st == TOOLDEC_OK ? len : 0);
    printf("\n");
    free(buf);
}

static void op_query(void) {
    tooldec_matcher **s = slot_arg();
    uint32_t left = tooldec_matcher_tokens_left(*s);
    printf("query acc=%d term=%d left=", tooldec_matcher_is_accepting(*s) ? 1 : 0,
           tooldec_matcher_is_terminated(*s) ? 1 : 0);
    if (left == TOOLDEC_NO_BUDGET) {
        printf("none");
    } else {
        printf("%u", (unsigned)left);
    }
    printf(" depth=%zu cap=%zu\n", tooldec_matcher_rollback_depth(*s),
           tooldec_matcher_rollback_capacity(*s));
}

static void op_reset(void) {
    tooldec_matcher **s = slot_arg();
    status_line("reset", tooldec_matcher_reset(*s), *s);
}

static void op_reset_to(void) {
    tooldec_matcher **s = slot_arg();
    char entry[128];
    if (!word(entry, sizeof entry)) {
        die("reset_to: argument");
    }
    status_line("reset_to", tooldec_matcher_reset_to(*s, entry), *s);
}

static void op_budget(void) {
    tooldec_matcher **s = slot_arg();
    char arg[32];
    if (!word(arg, sizeof arg)) {
        die("budget: argument");
    }
    uint32_t b = strcmp(arg, "-") ? (uint32_t)strtoul(arg, NULL, 10) : TOOLDEC_NO_BUDGET;
    status_line("budget", tooldec_matcher_set_budget(*s, b), *s);
}

static void op_orphan(void) {
    tooldec_artifact *a2 = NULL;
    char err[256];
    if (tooldec_artifact_open(artifact_path, &a2, err, sizeof err) != TOOLDEC_OK) {
        die(err);
    }
    tooldec_matcher *m = NULL;
    if (tooldec_matcher_new(a2, NULL, NULL, 1, &m, err, sizeof err) != TOOLDEC_OK) {
        die(err);
    }
    size_t words = tooldec_matcher_mask_words(m);
    tooldec_artifact_free(a2); /* the matcher keeps the artifact alive */
    uint32_t *buf = calloc(words, sizeof *buf);
    if (!buf) {
        die("out of memory");
    }
    tooldec_status st = tooldec_matcher_fill_mask(m, buf, words);
    printf("orphan %d %016llx\n", (int)st, (unsigned long long)fnv(buf, words));
    free(buf);
    tooldec_matcher_free(m);
}

/* The lowest token id whose bit is `bit` in the mask, below the token count. */
static uint32_t find_token(const uint32_t *mask, int bit) {
    for (size_t t = 0; t < n_tokens; t++) {
        if ((int)(mask[t / 32] >> (t % 32) & 1u) == bit) {
            return (uint32_t)t;
        }
    }
    die("no such token");
    return 0;
}

static void op_errors(void) {
    char err[256];
    tooldec_status st;
    tooldec_artifact *a = (tooldec_artifact *)1;

    /* Loading. */
    st = tooldec_artifact_open("/does/not/exist.tdm", &a, err, sizeof err);
    printf("e open_missing %d %d | %s\n", (int)st, a == NULL, err);
    printf("e open_nullpath %d\n", (int)tooldec_artifact_open(NULL, &a, NULL, 0));
    printf("e open_nullout %d\n", (int)tooldec_artifact_open(artifact_path, NULL, err, 0));
    uint8_t garbage[64];
    memset(garbage, 'x', sizeof garbage);
    a = (tooldec_artifact *)1;
    st = tooldec_artifact_from_buffer(garbage, sizeof garbage, &a, err, sizeof err);
    printf("e buffer_garbage %d %d | %s\n", (int)st, a == NULL, err);
    printf("e buffer_null %d\n", (int)tooldec_artifact_from_buffer(NULL, 10, &a, NULL, 0));
    {
        FILE *f = fopen(artifact_path, "rb");
        if (!f) {
            die("cannot reopen the artifact");
        }
        uint8_t *data = NULL;
        size_t len = 0, cap = 0, got;
        do {
            if (len == cap) {
                cap = cap ? 2 * cap : 65536;
                data = realloc(data, cap);
                if (!data) {
                    die("out of memory");
                }
            }
            got = fread(data + len, 1, cap - len, f);
            len += got;
        } while (got > 0);
        fclose(f);
        st = tooldec_artifact_from_buffer(data, len / 2, &a, err, sizeof err);
        printf("e buffer_truncated %d\n", (int)st);
        st = tooldec_artifact_from_buffer(data, len, &a, err, sizeof err);
        free(data); /* the bytes were copied */
        printf("e buffer_ok %d %zu\n", (int)st, tooldec_artifact_mask_width(a));
        tooldec_artifact_free(a);
    }
    /* A tiny error buffer: truncated, still terminated. */
    char tiny[8];
    memset(tiny, '#', sizeof tiny);
    tooldec_artifact_open("/does/not/exist.tdm", &a, tiny, sizeof tiny);
    printf("e tiny_buffer %zu\n", strlen(tiny));

    /* Creating matchers. */
    tooldec_matcher *m = (tooldec_matcher *)1;
    st = tooldec_matcher_new(NULL, NULL, NULL, 0, &m, NULL, 0);
    printf("e new_null_artifact %d %d\n", (int)st, m == NULL);
    st = tooldec_matcher_new(art, "nope", NULL, 0, &m, err, sizeof err);
    printf("e new_no_entry %d | %s\n", (int)st, err);
    uint32_t one = 1;
    st = tooldec_matcher_new(art, NULL, &one, 0, &m, err, sizeof err);
    printf("e new_budget %d | %s\n", (int)st, err);
    st = tooldec_matcher_new(art, NULL, NULL, (size_t)TOOLDEC_MAX_ROLLBACK + 1, &m, err, sizeof err);
    printf("e new_rollback %d | %s\n", (int)st, err);
    printf("e new_nullout %d\n", (int)tooldec_matcher_new(art, NULL, NULL, 0, NULL, NULL, 0));

    /* A good matcher, misused. */
    if (tooldec_matcher_new(art, NULL, NULL, 2, &m, err, sizeof err) != TOOLDEC_OK) {
        die(err);
    }
    size_t words = tooldec_matcher_mask_words(m);
    uint32_t *mask = malloc((words + 1) * sizeof *mask);
    if (!mask) {
        die("out of memory");
    }
    for (size_t i = 0; i <= words; i++) {
        mask[i] = SENTINEL;
    }
    st = tooldec_matcher_fill_mask(m, mask, words - 1);
    printf("e fill_small %d %d | %s\n", (int)st, all_sentinel(mask, words + 1),
           tooldec_matcher_last_error(m));
    printf("e fill_null %d\n", (int)tooldec_matcher_fill_mask(m, NULL, words));
    st = tooldec_matcher_rollback(m, 1);
    printf("e rollback_empty %d | %s\n", (int)st, tooldec_matcher_last_error(m));
    for (int i = 0; i < 3; i++) {
        tooldec_matcher_fill_mask(m, mask, words);
        if (tooldec_matcher_accept_token(m, find_token(mask, 1)) != TOOLDEC_OK) {
            die("the first allowed token was rejected");
        }
    }
    printf("e depth_after_3 %zu\n", tooldec_matcher_rollback_depth(m));
    st = tooldec_matcher_rollback(m, 3);
    printf("e rollback_deep %d %zu | %s\n", (int)st, tooldec_matcher_rollback_depth(m),
           tooldec_matcher_last_error(m));
    st = tooldec_matcher_rollback(m, 2);
    printf("e rollback_2 %d %zu\n", (int)st, tooldec_matcher_rollback_depth(m));
    tooldec_matcher_fill_mask(m, mask, words);
    uint32_t bad = find_token(mask, 0);
    st = tooldec_matcher_accept_token(m, bad);
    printf("e accept_rejected %d | %s\n", (int)st, tooldec_matcher_last_error(m));
    size_t k = 99;
    st = tooldec_matcher_accept_tokens(m, NULL, 2, &k);
    printf("e accepts_null %d %zu\n", (int)st, k);
    k = 99;
    printf("e validate_null %d\n", (int)tooldec_matcher_validate_tokens(m, NULL, 1, &k));
    k = 99;
    st = tooldec_matcher_validate_tokens(m, NULL, 0, &k);
    printf("e validate_empty %d %zu\n", (int)st, k);
    printf("e validate_nullout %d\n", (int)tooldec_matcher_validate_tokens(m, &bad, 1, NULL));
    st = tooldec_matcher_reset_to(m, "nope");
    printf("e reset_to_bad %d | %s\n", (int)st, tooldec_matcher_last_error(m));
    printf("e reset_to_null %d\n", (int)tooldec_matcher_reset_to(m, NULL));
    st = tooldec_matcher_reset(m);
    printf("e reset %d %zu\n", (int)st, tooldec_matcher_rollback_depth(m));
    st = tooldec_matcher_set_budget(m, 0);
    printf("e budget_zero %d | %s\n", (int)st, tooldec_matcher_last_error(m));
    printf("e forced_null %d\n", (int)tooldec_matcher_forced_bytes(m, NULL, 5, &k));
    k = 99;
    st = tooldec_matcher_forced_bytes(m, NULL, 0, &k);
    printf("e forced_zero %d %zu\n", (int)st, k);
    printf("e forced_nullout %d\n", (int)tooldec_matcher_forced_bytes(m, (uint8_t *)mask, 4, NULL));

    /* Vocabulary checks. */
    uint8_t fp[TOOLDEC_FINGERPRINT_BYTES];
    tooldec_artifact_vocab_fingerprint(art, fp);
    printf("e vocab_ok %d\n", (int)tooldec_artifact_check_vocabulary(art, fp, err, sizeof err));
    fp[0] ^= 1;
    st = tooldec_artifact_check_vocabulary(art, fp, err, sizeof err);
    printf("e vocab_bad %d | %s\n", (int)st, err);
    printf("e vocab_null %d\n", (int)tooldec_artifact_check_vocabulary(art, NULL, NULL, 0));
    size_t vocab = tooldec_artifact_mask_width(art);
    st = tooldec_artifact_check_mask_width(art, vocab - 1, err, sizeof err);
    printf("e logits_narrow %d | %s\n", (int)st, err);
    printf("e logits_exact %d\n", (int)tooldec_artifact_check_mask_width(art, vocab, NULL, 0));
    printf("e logits_wide %d\n", (int)tooldec_artifact_check_mask_width(art, vocab + 100, NULL, 0));

    /* Batched fill misuse: nothing is written. */
    {
        const tooldec_matcher *two[2] = {m, NULL};
        size_t total = 2 * (words + 8);
        uint32_t *rows = malloc(total * sizeof *rows);
        if (!rows) {
            die("out of memory");
        }
        for (size_t i = 0; i < total; i++) {
            rows[i] = SENTINEL;
        }
        st = tooldec_fill_masks(two, 2, rows, words + 8, words, err, sizeof err);
        printf("e batch_null_entry %d %d | %s\n", (int)st, all_sentinel(rows, total), err);
        two[1] = m;
        st = tooldec_fill_masks(two, 2, rows, words - 1, words, err, sizeof err);
        printf("e batch_stride %d %d | %s\n", (int)st, all_sentinel(rows, total), err);
        st = tooldec_fill_masks(two, 2, rows, words + 8, words - 1, err, sizeof err);
        printf("e batch_narrow %d %d | %s\n", (int)st, all_sentinel(rows, total), err);
        printf("e batch_null_base %d\n", (int)tooldec_fill_masks(two, 2, NULL, words, words, NULL, 0));
        printf("e batch_null_list %d\n", (int)tooldec_fill_masks(NULL, 2, rows, words, words, NULL, 0));
        printf("e batch_empty %d %d\n", (int)tooldec_fill_masks(NULL, 0, NULL, 0, 0, NULL, 0),
               all_sentinel(rows, total));
        free(rows);
    }
    free(mask);
    tooldec_matcher_free(m);

    /* NULL handles: status TOOLDEC_ERR_NULL or a neutral value, never a crash. */
    size_t n = 99;
    const uint8_t *b = (const uint8_t *)1;
    uint32_t t = 0;
    tooldec_matcher *c = (tooldec_matcher *)1;
    /* Calls whose out-parameters are printed run first: argument order is unspecified. */
    tooldec_status clone_st = tooldec_matcher_clone(NULL, &c);
    printf("e null_matcher %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %zu %zu %zu %d\n",
           (int)tooldec_matcher_fill_mask(NULL, &t, 1), (int)tooldec_matcher_accept_token(NULL, 0),
           (int)tooldec_matcher_accept_tokens(NULL, &t, 1, &n),
           (int)tooldec_matcher_validate_tokens(NULL, &t, 1, &n),
           (int)tooldec_matcher_rollback(NULL, 0), (int)tooldec_matcher_reset(NULL),
           (int)tooldec_matcher_reset_to(NULL, "start"), (int)tooldec_matcher_set_budget(NULL, 5),
           (int)clone_st, c == NULL,
           (int)tooldec_matcher_forced_bytes(NULL, (uint8_t *)&t, 4, &n),
           tooldec_matcher_is_accepting(NULL), tooldec_matcher_is_terminated(NULL),
           tooldec_matcher_is_allowed(NULL, 0), tooldec_matcher_tokens_left(NULL) == TOOLDEC_NO_BUDGET,
           tooldec_matcher_rollback_depth(NULL), tooldec_matcher_rollback_capacity(NULL),
           tooldec_matcher_mask_words(NULL), tooldec_matcher_last_error(NULL) != NULL);
    n = 99;
    const uint32_t *eos = tooldec_artifact_eos_tokens(NULL, &n);
    size_t n_eos = n;
    tooldec_status bytes_st = tooldec_artifact_token_bytes(NULL, 0, &b, &n);
    printf("e null_artifact %zu %zu %zu %d %zu %d %zu %d %u %d %d %d %d\n",
           tooldec_artifact_mask_width(NULL), tooldec_artifact_mask_words(NULL),
           tooldec_artifact_token_count(NULL), eos == NULL, n_eos,
           tooldec_artifact_metadata(NULL) == NULL, tooldec_artifact_entry_count(NULL),
           tooldec_artifact_entry_name(NULL, 0) == NULL, (unsigned)tooldec_artifact_min_tokens(NULL),
           tooldec_artifact_max_tokens(NULL) == TOOLDEC_NO_BUDGET,
           (int)tooldec_artifact_vocab_fingerprint(NULL, (uint8_t *)&t),
           (int)bytes_st, b == NULL);
    tooldec_matcher_free(NULL);
    tooldec_artifact_free(NULL);
    printf("e status_names %s %s %s\n", tooldec_status_name(TOOLDEC_OK),
           tooldec_status_name(TOOLDEC_ERR_ROLLBACK), tooldec_status_name(99));
    printf("e version %s\n", tooldec_version());
}

/* The compiler's error paths, its cache and NULL handles; a compiler of
 * its own (the built-in GPT-2 vocabulary, EOS given by id). */
static void op_compile_errors(void) {
    char err[512];
    tooldec_status st;
    tooldec_compiler *c = (tooldec_compiler *)1;
    tooldec_artifact *a = (tooldec_artifact *)1;

    /* Creating. */
    st = tooldec_compiler_open("/does/not/tokenizer.json", NULL, 0, TOOLDEC_DEFAULT_CACHE_BYTES, &c,
                               err, sizeof err);
    printf("ce open_missing %d %d | %s\n", (int)st, c == NULL, err);
    printf("ce open_null %d\n", (int)tooldec_compiler_open(NULL, NULL, 0, 0, &c, NULL, 0));
    const char *bad_eos[] = {"<|nope|>"};
    c = (tooldec_compiler *)1;
    st = tooldec_compiler_gpt2(bad_eos, 1, 0, &c, err, sizeof err);
    printf("ce gpt2_bad_eos %d %d | %s\n", (int)st, c == NULL, err);
    const char *null_eos[] = {"50256", NULL};
    st = tooldec_compiler_gpt2(null_eos, 2, 0, &c, err, sizeof err);
    printf("ce gpt2_null_eos %d | %s\n", (int)st, err);
    printf("ce gpt2_nullout %d\n", (int)tooldec_compiler_gpt2(NULL, 0, 0, NULL, NULL, 0));
    st = tooldec_compiler_from_tokenizer_json("{}", 2, "mine", NULL, 0, 0, &c, err, sizeof err);
    printf("ce text_no_eos %d | %s\n", (int)st, err);
    const char *eos[] = {"50256"};
    if (tooldec_compiler_gpt2(eos, 1, TOOLDEC_DEFAULT_CACHE_BYTES, &c, err, sizeof err) != TOOLDEC_OK) {
        die(err);
    }
    size_t n_eos = 0;
    const uint32_t *eos_ids = tooldec_compiler_eos_tokens(c, &n_eos);
    uint8_t fp[TOOLDEC_FINGERPRINT_BYTES], art_fp[TOOLDEC_FINGERPRINT_BYTES];
    tooldec_artifact_vocab_fingerprint(art, art_fp);
    st = tooldec_compiler_vocab_fingerprint(c, fp);
    printf("ce compiler %zu %zu %u %d %d cache=%zu\n", tooldec_compiler_token_count(c), n_eos,
           (unsigned)eos_ids[0], (int)st, !memcmp(fp, art_fp, sizeof fp),
           tooldec_compiler_cache_bytes(c));

    /* Compiling: a bad tool list, bad text, bad options. */
    const char *bad_type = "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
                           "{\"type\": \"object\", \"properties\": {\"x\": {\"type\": \"strng\"}}}}}]";
    st = tooldec_compiler_compile(c, bad_type, strlen(bad_type), NULL, &a, err, sizeof err);
    printf("ce bad_type %d %d | %s\n", (int)st, a == NULL, err);
    const char *cut = "[{\"name\": \"f\",";
    st = tooldec_compiler_compile(c, cut, strlen(cut), NULL, &a, err, sizeof err);
    printf("ce bad_json %d | %s\n", (int)st, err);
    st = tooldec_compiler_compile(c, "[\xff]", 3, NULL, &a, err, sizeof err);
    printf("ce not_utf8 %d | %s\n", (int)st, err);
    /* Not NUL-terminated: only tools_len bytes are read. */
    const char tiny[] = "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
                        "{\"type\": \"object\", \"properties\": {}}}}]garbage";
    size_t tiny_len = strlen(tiny) - strlen("garbage");
    st = tooldec_compiler_compile(c, tiny, tiny_len, "{\"max-tokens\": 3}", &a, err, sizeof err);
    printf("ce bad_key %d | %s\n", (int)st, err);
    st = tooldec_compiler_compile(c, tiny, tiny_len, "{\"format\": \"nope\"}", &a, err, sizeof err);
    printf("ce bad_format %d | %s\n", (int)st, err);
    st = tooldec_compiler_compile(c, tiny, tiny_len, "{\"max_tokens\": 2}", &a, err, sizeof err);
    printf("ce budget %d | %s\n", (int)st, err);
    st = tooldec_compiler_compile(c, tiny, tiny_len, "{\"format\": \"hermes\"", &a, err, sizeof err);
    printf("ce options_json %d | %s\n", (int)st, err);
    printf("ce null %d %d %d %d\n",
           (int)tooldec_compiler_compile(NULL, tiny, tiny_len, NULL, &a, NULL, 0),
           (int)tooldec_compiler_compile(c, NULL, 5, NULL, &a, NULL, 0),
           (int)tooldec_compiler_compile(c, tiny, tiny_len, NULL, NULL, NULL, 0), a == NULL);

    /* The cache: the same list with the same options is the same artifact,
     * shared, not copied; cleared, it is compiled again to the same bytes. */
    tooldec_artifact *a1, *a2, *a3;
    const char *opts = "{\"format\": \"hermes\", \"max_tokens\": null}";
    if (tooldec_compiler_compile(c, tiny, tiny_len, opts, &a1, err, sizeof err) != TOOLDEC_OK) {
        die(err);
    }
    size_t held = tooldec_compiler_cache_bytes(c);
    st = tooldec_compiler_compile(c, tiny, tiny_len, opts, &a2, err, sizeof err);
    size_t n1, n2, n3;
    const uint8_t *p1 = tooldec_artifact_payload(a1, &n1);
    const uint8_t *p2 = tooldec_artifact_payload(a2, &n2);
    printf("ce again %d %d %d %d\n", (int)st, held > 0, p1 == p2 && n1 == n2,
           tooldec_compiler_cache_bytes(c) == held);
    tooldec_compiler_clear_cache(c);
    size_t cleared = tooldec_compiler_cache_bytes(c);
    st = tooldec_compiler_compile(c, tiny, tiny_len, opts, &a3, err, sizeof err);
    const uint8_t *p3 = tooldec_artifact_payload(a3, &n3);
    printf("ce cleared %zu %d %d %d\n", cleared, (int)st, p3 != p1,
           n3 == n1 && !memcmp(p1, p3, n1));
    tooldec_artifact_free(a1);
    tooldec_artifact_free(a2);
    tooldec_compiler_free(c);
    /* The artifact outlives its compiler. */
    tooldec_matcher *m = NULL;
    st = tooldec_matcher_new(a3, NULL, NULL, 0, &m, err, sizeof err);
    printf("ce outlives %d %s\n", (int)st, tooldec_artifact_entry_name(a3, 0));
    tooldec_matcher_free(m);
    tooldec_artifact_free(a3);

    /* NULL handles. */
    size_t n = 99;
    const uint32_t *none = tooldec_compiler_eos_tokens(NULL, &n);
    tooldec_compiler_clear_cache(NULL);
    tooldec_compiler_free(NULL);
    printf("ce null_compiler %zu %zu %d %zu %d %d\n", tooldec_compiler_cache_bytes(NULL),
           tooldec_compiler_token_count(NULL), none == NULL, n,
           (int)tooldec_compiler_vocab_fingerprint(NULL, fp),
           tooldec_artifact_payload(NULL, &n) == NULL);
    printf("ce status_name %s\n", tooldec_status_name(TOOLDEC_ERR_COMPILE));
}

/* `walk --compile`: compiles TOOLS with the options in OPTIONS for the
 * built-in GPT-2 vocabulary, frees the compiler, and writes the payload to
 * OUT. */
static void compile_artifact(const char *tools_path, const char *options_path, const char *out) {
    char err[512];
    tooldec_compiler *c = NULL;
    if (tooldec_compiler_gpt2(NULL, 0, TOOLDEC_DEFAULT_CACHE_BYTES, &c, err, sizeof err) != TOOLDEC_OK) {
        die(err);
    }
    size_t tools_len, options_len;
    char *tools = read_file(tools_path, &tools_len);
    char *options = read_file(options_path, &options_len);
    if (tooldec_compiler_compile(c, tools, tools_len, options, &art, err, sizeof err) != TOOLDEC_OK) {
        die(err);
    }
    free(tools);
    free(options);
    tooldec_compiler_free(c); /* the artifact holds its own grammar */
    size_t len;
    const uint8_t *payload = tooldec_artifact_payload(art, &len);
    FILE *f = fopen(out, "wb");
    if (!f || fwrite(payload, 1, len, f) != len || fclose(f) != 0) {
        die("cannot write the payload");
    }
    artifact_path = out;
}

int main(int argc, char **argv) {
    const char *script_path;
    if (argc == 6 && !strcmp(argv[1], "--compile")) {
        compile_artifact(argv[2], argv[3], argv[4]);
        script_path = argv[5];
    } else if (argc == 3) {
        artifact_path = argv[1];
        char err[512];
        if (tooldec_artifact_open(artifact_path, &art, err, sizeof err) != TOOLDEC_OK) {
            die(err);
        }
        script_path = argv[2];
    } else {
        die("usage: walk ARTIFACT SCRIPT | walk --compile TOOLS OPTIONS OUT SCRIPT");
    }
    n_tokens = tooldec_artifact_token_count(art);
    script = fopen(script_path, "r");
    if (!script) {
        die("cannot open the script");
    }
    char op[32];
    while (word(op, sizeof op)) {
        if (!strcmp(op, "info")) op_info();
        else if (!strcmp(op, "bytes")) op_bytes();
        else if (!strcmp(op, "new")) op_new();
        else if (!strcmp(op, "clone")) op_clone();
        else if (!strcmp(op, "free")) op_free();
        else if (!strcmp(op, "mask")) op_mask();
        else if (!strcmp(op, "batch")) op_batch();
        else if (!strcmp(op, "accept")) op_accept();
        else if (!strcmp(op, "accepts")) op_accepts();
        else if (!strcmp(op, "validate")) op_validate();
        else if (!strcmp(op, "allowed")) op_allowed();
        else if (!strcmp(op, "rollback")) op_rollback();
        else if (!strcmp(op, "forced")) op_forced();
        else if (!strcmp(op, "query")) op_query();
        else if (!strcmp(op, "reset")) op_reset();
        else if (!strcmp(op, "reset_to")) op_reset_to();
        else if (!strcmp(op, "budget")) op_budget();
        else if (!strcmp(op, "orphan")) op_orphan();
        else if (!strcmp(op, "errors")) op_errors();
        else if (!strcmp(op, "compile_errors")) op_compile_errors();
        else die("unknown operation");
    }
    fclose(script);
    for (int i = 0; i < SLOTS; i++) {
        tooldec_matcher_free(slot[i]);
    }
    tooldec_artifact_free(art);
    return 0;
}
