/* Reads tool calls back through the C ABI: tooldec_artifact_parse_text
 * and _parse_tokens. Usage: parse ARTIFACT TEXTFILE TOKENSFILE; prints one
 * line per call of the API (status, length, JSON or message), which
 * tests/parse.rs compares with the Rust reader. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tooldec.h"

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    if (fread(buf, 1, (size_t)len, f) != (size_t)len) { fclose(f); free(buf); return NULL; }
    fclose(f);
    buf[len] = 0;
    *n = (size_t)len;
    return buf;
}

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    char err[512];
    tooldec_artifact *art;
    if (tooldec_artifact_open(argv[1], &art, err, sizeof err) != TOOLDEC_OK) { puts(err); return 1; }
    size_t n = 0;
    char *text = slurp(argv[2], &n);
    if (!text) return 1;

    /* Ask for the size first, then read into a buffer that fits. */
    size_t len = 0;
    tooldec_status s = tooldec_artifact_parse_text(art, NULL, text, n, NULL, 0, &len, err, sizeof err);
    printf("size %s %zu\n", tooldec_status_name(s), len);
    char *out = malloc(len + 1);
    s = tooldec_artifact_parse_text(art, NULL, text, n, out, len + 1, &len, err, sizeof err);
    printf("text %s %zu %s\n", tooldec_status_name(s), len, s == TOOLDEC_OK ? out : err);
    free(out);

    /* The same output as token ids. */
    size_t tn = 0;
    char *ids_text = slurp(argv[3], &tn);
    if (!ids_text) return 1;
    uint32_t *ids = malloc((tn + 1) * sizeof *ids);
    size_t count = 0;
    for (char *p = strtok(ids_text, ","); p; p = strtok(NULL, ",")) ids[count++] = (uint32_t)strtoul(p, NULL, 10);
    char buf[4096];
    s = tooldec_artifact_parse_tokens(art, "start", ids, count, buf, sizeof buf, &len, err, sizeof err);
    printf("tokens %s %zu %s\n", tooldec_status_name(s), len, s == TOOLDEC_OK ? buf : err);

    /* A cut output is refused with a message; an unknown entry too. */
    s = tooldec_artifact_parse_text(art, NULL, text, n - 2, buf, sizeof buf, &len, err, sizeof err);
    printf("cut %s %s\n", tooldec_status_name(s), err);
    s = tooldec_artifact_parse_tokens(art, "nope", ids, count, buf, sizeof buf, &len, err, sizeof err);
    printf("entry %s %s\n", tooldec_status_name(s), err);
    s = tooldec_artifact_parse_text(NULL, NULL, text, n, buf, sizeof buf, &len, err, sizeof err);
    printf("null %s\n", tooldec_status_name(s));

    free(ids);
    free(ids_text);
    free(text);
    tooldec_artifact_free(art);
    return 0;
}
