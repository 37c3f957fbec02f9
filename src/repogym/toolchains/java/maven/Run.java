package repogym.maven;

import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.MessageDigest;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

/**
 * One test run's plan and its event log.
 *
 * <p>The plan is a properties file named by the user property {@code repogym.plan}; it is
 * read once, when the projects have been read, and removed at once, before any of the
 * project's code (annotation processors, tests) runs. It holds the run's nonce, which every
 * line of the event log ({@code <out>/events.jsonl}) carries.
 */
final class Run {
    static Run current;

    final String nonce;
    final File out;
    final Properties plan;
    final Map<String, Integer> modules = new HashMap<>();
    final Map<String, File> canaries = new HashMap<>();

    private Run(Properties plan) {
        this.plan = plan;
        this.nonce = plan.getProperty("nonce", "");
        this.out = new File(plan.getProperty("out", "/nonexistent"));
    }

    /** The run of the plan named by {@code repogym.plan}, or null without one. */
    static synchronized Run load(Properties user) {
        if (current != null) {
            return current;
        }
        String path = user.getProperty("repogym.plan", System.getProperty("repogym.plan"));
        if (path == null || path.isEmpty()) {
            return null;
        }
        File file = new File(path);
        Properties plan = new Properties();
        try (InputStream in = new FileInputStream(file)) {
            plan.load(in);
        } catch (IOException e) {
            throw new IllegalStateException("repogym: cannot read the run plan " + path, e);
        }
        if (!file.delete()) {
            throw new IllegalStateException("repogym: cannot remove the run plan " + path);
        }
        current = new Run(plan);
        return current;
    }

    static String key(org.apache.maven.project.MavenProject project) {
        return project.getGroupId() + ":" + project.getArtifactId();
    }

    /** Appends one event: a JSON object of the given key/value pairs and the nonce. */
    synchronized void emit(String event, Object... pairs) {
        StringBuilder line = new StringBuilder("{\"event\":").append(quote(event));
        line.append(",\"nonce\":").append(quote(nonce));
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            line.append(',').append(quote(String.valueOf(pairs[i]))).append(':');
            Object value = pairs[i + 1];
            line.append(value instanceof Number || value instanceof Boolean
                    ? String.valueOf(value) : quote(String.valueOf(value)));
        }
        line.append("}\n");
        try (OutputStream o = new FileOutputStream(new File(out, "events.jsonl"), true)) {
            o.write(line.toString().getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new IllegalStateException("repogym: cannot write the event log", e);
        }
    }

    /** Removes the canaries still planted (a build that stopped before running tests). */
    synchronized void uproot() {
        for (File canary : canaries.values()) {
            canary.delete();
        }
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    static String sha256(File f) {
        try {
            return sha256(Files.readAllBytes(f.toPath()));
        } catch (Exception e) {
            return "";
        }
    }

    static String sha256(byte[] data) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(data);
            StringBuilder b = new StringBuilder();
            for (byte x : d) {
                b.append(String.format("%02x", x));
            }
            return b.toString();
        } catch (Exception e) {
            return "";
        }
    }
}
