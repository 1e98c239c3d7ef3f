package io.sovereigngateway;

/** The result of {@link JournalVerifier#verifyExport}: counts, the head, and the first problem. */
public final class JournalVerification {
    boolean ok = true;
    long entries;
    Long firstSeq;
    Long headSeq;
    String headHash;
    long gaps;
    long checkpointsChecked;
    Problem problem;

    /** Where and why verification failed. {@code reason} starts with one of {@code malformed},
     * {@code edited}, {@code broken link}, {@code reordered}, {@code bad signature},
     * {@code untrusted key}, {@code rewritten}, {@code truncated}. */
    public static final class Problem {
        private final Integer line;
        private final Long seq;
        private final String reason;

        Problem(Integer line, Long seq, String reason) {
            this.line = line;
            this.seq = seq;
            this.reason = reason;
        }

        /** 1-based line of the export; null for a problem of a checkpoint without a matching line. */
        public Integer line() {
            return line;
        }

        public Long seq() {
            return seq;
        }

        public String reason() {
            return reason;
        }

        @Override
        public String toString() {
            return "line " + line + " (seq " + seq + "): " + reason;
        }
    }

    public boolean ok() {
        return ok;
    }

    public long entries() {
        return entries;
    }

    public Long firstSeq() {
        return firstSeq;
    }

    public Long headSeq() {
        return headSeq;
    }

    public String headHash() {
        return headHash;
    }

    /** Gaps in seq (a filtered export); allowed. */
    public long gaps() {
        return gaps;
    }

    /** Checkpoints whose signature verified and that matched an entry of the export. */
    public long checkpointsChecked() {
        return checkpointsChecked;
    }

    /** Null when ok. */
    public Problem problem() {
        return problem;
    }

    @Override
    public String toString() {
        return (ok ? "OK" : "FAIL") + ": " + entries + " entries, seq " + firstSeq + ".." + headSeq + ", head "
                + headHash + ", " + gaps + " gaps, " + checkpointsChecked + " checkpoints checked"
                + (problem == null ? "" : "; " + problem);
    }
}
