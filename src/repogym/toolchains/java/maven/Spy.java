package repogym.maven;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import javax.inject.Named;
import javax.inject.Singleton;
import org.apache.maven.eventspy.AbstractEventSpy;
import org.apache.maven.execution.ExecutionEvent;
import org.apache.maven.plugin.MojoExecution;
import org.apache.maven.project.MavenProject;

/**
 * Records in the run's event log what the build did: where each module's tests were
 * compiled from, every mojo that failed (with its error: a compilation failure, a forked
 * JVM that crashed), Surefire's end in each module with the digest of every report it
 * wrote, modules skipped, and the session's end. Removes the canary's source as soon as
 * Surefire starts (its class is compiled by then).
 *
 * <p>While Surefire runs, a {@link Watch} keeps each report as it was first written whole:
 * Surefire writes a class's report (from Maven's process) when the class ends, and never
 * again, while the forked JVM that runs the tests lives on, as the same user. The digest
 * recorded is that first version's, so a report the fork rewrote after Surefire wrote it
 * (from a shutdown hook, say) does not match it. The watch looks every 10 ms and, through
 * {@link Tap}, each time Maven prints a line: Surefire prints a class's summary right after
 * it wrote the class's report, before the fork can have been told its run is over.
 */
@Named("repogym")
@Singleton
public class Spy extends AbstractEventSpy {
    static final int MESSAGE_CHARS = 8000;

    @Override
    public void onEvent(Object event) {
        Run run = Run.current;
        if (run == null || !(event instanceof ExecutionEvent)) {
            return;
        }
        ExecutionEvent e = (ExecutionEvent) event;
        MavenProject project = e.getProject();
        Integer module = project == null ? null : run.modules.get(Run.key(project));
        switch (e.getType()) {
            case MojoStarted:
                if (isSurefire(e.getMojoExecution())) {
                    testsStart(run, e, project, module);
                }
                break;
            case MojoSucceeded:
            case MojoFailed:
                mojoEnded(run, e, module);
                break;
            case ProjectSkipped:
                run.emit("skipped", "module", module);
                break;
            case SessionEnded:
                run.uproot();
                run.emit("done");
                break;
            default:
                break;
        }
    }

    private static final Map<Integer, Watch> WATCHES = new HashMap<>();

    /** Every watch looks at its folder now (Maven printed a line: see {@link Tap}). */
    static void lookNow() {
        Watch[] watches;
        synchronized (WATCHES) {
            watches = WATCHES.values().toArray(new Watch[0]);
        }
        for (Watch watch : watches) {
            watch.look();
        }
    }

    private static void testsStart(Run run, ExecutionEvent e, MavenProject project, Integer module) {
        if (module != null) {
            Watch watch = new Watch(new File(run.out, "reports/" + module));
            synchronized (WATCHES) {
                Watch old = WATCHES.put(module, watch);
                if (old != null) {
                    old.finish();
                }
            }
            watch.start();
        }
        File canary = run.canaries.remove(Run.key(project));
        if (canary != null) {
            canary.delete();
        }
        File top = e.getSession().getTopLevelProject().getBasedir();
        StringBuilder roots = new StringBuilder();
        for (String root : project.getTestCompileSourceRoots()) {
            roots.append(Participant.relative(top, new File(root))).append('\n');
        }
        run.emit("tests", "module", module, "roots", roots.toString());
    }

    private static void mojoEnded(Run run, ExecutionEvent e, Integer module) {
        MojoExecution m = e.getMojoExecution();
        boolean ok = e.getType() == ExecutionEvent.Type.MojoSucceeded;
        boolean surefire = isSurefire(m);
        if (ok && !surefire) {
            return;
        }
        String message = "";
        if (!ok && e.getException() != null && e.getException().getMessage() != null) {
            message = e.getException().getMessage();
            if (message.length() > MESSAGE_CHARS) {
                message = message.substring(0, MESSAGE_CHARS);
            }
        }
        run.emit("mojo", "module", module, "mojo", m.getArtifactId() + ":" + m.getGoal(),
                 "ok", ok, "message", message);
        if (surefire) {
            Watch watch;
            synchronized (WATCHES) {
                watch = WATCHES.remove(module);
            }
            Map<String, String> first = watch == null ? new HashMap<>() : watch.finish();
            File dir = new File(run.out, "reports/" + module);
            String[] names = dir.list();
            if (names != null) {
                Arrays.sort(names);
                for (String name : names) {
                    if (name.startsWith("TEST-") && name.endsWith(".xml")) {
                        String now = Run.sha256(new File(dir, name));
                        run.emit("report", "module", module, "file", name,
                                 "sha256", first.getOrDefault(name, now));
                    }
                }
            }
        }
    }

    /**
     * Watches one module's reports folder while Surefire runs: the digest of each report's
     * first whole version (one that ends its {@code testsuite}) written during the run. A
     * report already there when Surefire started (an earlier execution's) counts from its
     * first different version.
     */
    static final class Watch extends Thread {
        static final long INTERVAL_MS = 10;

        private final File dir;
        private final Map<String, String> before = new HashMap<>();
        private final Map<String, String> first = new HashMap<>();
        private final Map<String, String> stamps = new HashMap<>();
        private volatile boolean stop;

        Watch(File dir) {
            super("repogym-reports-watch");
            setDaemon(true);
            this.dir = dir;
            String[] names = dir.list();
            for (String name : names == null ? new String[0] : names) {
                byte[] data = read(new File(dir, name));
                if (data != null) {
                    before.put(name, Run.sha256(data));
                }
            }
        }

        @Override
        public void run() {
            while (!stop) {
                scan();
                try {
                    Thread.sleep(INTERVAL_MS);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }

        /** A look at the folder now, unless the watch has finished. */
        synchronized void look() {
            if (!stop) {
                scan();
            }
        }

        /** Stops watching; a last look at every report; the first versions. */
        synchronized Map<String, String> finish() {
            stop = true;
            interrupt();
            stamps.clear();
            scan();
            return new HashMap<>(first);
        }

        private synchronized void scan() {
            String[] names = dir.list();
            for (String name : names == null ? new String[0] : names) {
                if (!name.startsWith("TEST-") || !name.endsWith(".xml") || first.containsKey(name)) {
                    continue;
                }
                File f = new File(dir, name);
                String stamp = stamp(f);
                if (stamp.equals(stamps.get(name))) {
                    continue;
                }
                byte[] data = read(f);
                if (data == null || !whole(data)) {
                    continue;
                }
                stamps.put(name, stamp);
                String digest = Run.sha256(data);
                if (!digest.equals(before.get(name))) {
                    first.put(name, digest);
                }
            }
        }

        private static String stamp(File f) {
            try {
                return Files.getAttribute(f.toPath(), "unix:ctime") + "/" + f.length();
            } catch (IOException | RuntimeException e) {
                return f.lastModified() + "/" + f.length();
            }
        }

        private static byte[] read(File f) {
            try {
                return Files.readAllBytes(f.toPath());
            } catch (IOException e) {
                return null;
            }
        }

        private static boolean whole(byte[] data) {
            String tail = new String(data, Math.max(0, data.length - 64), Math.min(64, data.length),
                                     java.nio.charset.StandardCharsets.ISO_8859_1).trim();
            return tail.endsWith("</testsuite>");
        }
    }

    static boolean isSurefire(MojoExecution m) {
        return m != null && "maven-surefire-plugin".equals(m.getArtifactId())
                && "test".equals(m.getGoal());
    }
}
