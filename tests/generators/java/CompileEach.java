import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

/**
 * Compiles each Java file named on standard input, one per line as {@code SOURCEPATH<TAB>FILE},
 * on its own (the rest of its project from SOURCEPATH), all in one JVM. Prints one line per
 * file: {@code OK<TAB>FILE} or {@code ERROR<TAB>FILE<TAB>first error}.
 */
public class CompileEach {
    public static void main(String[] args) throws Exception {
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        Path out = Files.createTempDirectory("compile-each");
        Path nothing = Files.createTempDirectory("compile-each-classpath");
        List<String> lines = new ArrayList<>();
        java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (!line.isBlank()) {
                lines.add(line);
            }
        }
        // One file manager for all: it caches the platform's classes between compilations.
        StandardJavaFileManager files = compiler.getStandardFileManager(null, Locale.ROOT, null);
        for (String line : lines) {
            String[] parts = line.split("\t");
            DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
            {
                Iterable<? extends JavaFileObject> units = files.getJavaFileObjects(new File(parts[1]));
                List<String> options = List.of("-d", out.toString(), "-sourcepath", parts[0],
                        "-classpath", nothing.toString(),
                        "-proc:none", "-nowarn", "-implicit:none", "-Xlint:none", "-encoding", "UTF-8");
                boolean ok = compiler.getTask(null, files, diagnostics, options, null, units).call();
                String first = "";
                for (Diagnostic<? extends JavaFileObject> d : diagnostics.getDiagnostics()) {
                    if (d.getKind() == Diagnostic.Kind.ERROR) {
                        first = "line " + d.getLineNumber() + ": " + d.getMessage(Locale.ROOT).replace('\n', ' ').replace('\t', ' ');
                        break;
                    }
                }
                System.out.println((ok ? "OK" : "ERROR") + "\t" + parts[1] + (ok ? "" : "\t" + first));
                System.out.flush();
            }
        }
    }
}
