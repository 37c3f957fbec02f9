package repogym.maven;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;

/**
 * Maven's own console, tapped in Maven's process: every line Maven prints makes each
 * {@link Spy.Watch} look at its reports folder at once, in the printing thread.
 *
 * <p>Surefire, in Maven's process, writes a class's report and then prints the class's
 * summary line ("Tests run: ..."), in the one thread that reads the test JVM's events, and
 * only then reads the next event. The test JVM's shutdown hooks run after its last event
 * has been answered, so the report of every class, the last one included, has been read
 * as Surefire wrote it before any hook can rewrite it, however loaded the machine. The
 * watch's own poll stays for output that does not pass here.
 *
 * <p>Maven's logger keeps the stream it found at start ({@code cacheOutputStream=true} in
 * Maven's {@code simplelogger.properties}), so setting {@code System.out} is not enough: the
 * logger's own output choice is replaced too, by reflection on the SLF4J simple binding Maven
 * ships. Where that binding is not found (another Maven), the watch's poll alone remains.
 */
final class Tap extends FilterOutputStream {
    private Tap(OutputStream out) {
        super(out);
    }

    /** Taps {@code System.out} and {@code System.err} (once). */
    static synchronized void install() {
        if (!(System.out instanceof Tapped)) {
            System.setOut(new Tapped(System.out));
        }
        if (!(System.err instanceof Tapped)) {
            System.setErr(new Tapped(System.err));
        }
        tapLogger();
    }

    /** The stream Maven's logger writes to, tapped; false where the binding is unknown. */
    static boolean tapLogger() {
        String[] bindings = {"org.slf4j.impl.SimpleLogger", "org.slf4j.simple.SimpleLogger"};
        ClassLoader loader = org.slf4j.LoggerFactory.getILoggerFactory().getClass().getClassLoader();
        for (String binding : bindings) {
            try {
                Class<?> logger = Class.forName(binding, true, loader);
                Field params = logger.getDeclaredField("CONFIG_PARAMS");
                params.setAccessible(true);
                Object config = params.get(null);
                Field choiceField = config.getClass().getDeclaredField("outputChoice");
                choiceField.setAccessible(true);
                Object choice = choiceField.get(config);
                Method target = choice.getClass().getDeclaredMethod("getTargetPrintStream");
                target.setAccessible(true);
                PrintStream stream = (PrintStream) target.invoke(choice);
                if (stream instanceof Tapped) {
                    return true;
                }
                Constructor<?> make = choice.getClass().getDeclaredConstructor(PrintStream.class);
                make.setAccessible(true);
                choiceField.set(config, make.newInstance(new Tapped(stream)));
                return true;
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                // not this binding
            }
        }
        return false;
    }

    @Override
    public void write(int b) throws IOException {
        out.write(b);
        if (b == '\n') {
            look();
        }
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        out.write(b, off, len);
        for (int i = off; i < off + len; i++) {
            if (b[i] == '\n') {
                look();
                return;
            }
        }
    }

    private void look() throws IOException {
        out.flush();
        Spy.lookNow();
    }

    private static final class Tapped extends PrintStream {
        Tapped(PrintStream inner) {
            super(new Tap(inner), true);
        }
    }
}
