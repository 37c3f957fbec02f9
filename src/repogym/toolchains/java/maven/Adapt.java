package repogym.maven;

import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.maven.model.Dependency;
import org.apache.maven.model.Plugin;
import org.apache.maven.project.MavenProject;
import org.codehaus.plexus.util.xml.Xpp3Dom;

/**
 * What the environment changes in a build so that it runs on JDK 17, in memory (the POM is
 * never touched); each change is named in the event log.
 *
 * <ul>
 *   <li>The old Error Prone compiler ({@code compilerId} {@code javac-with-errorprone}, from
 *       plexus-compiler-javac-errorprone) bundles a javac 9 that cannot read JDK 17's class
 *       files: the build compiles with the JDK's javac instead (Error Prone is a linter).
 *   <li>Source and target levels JDK 17's javac no longer accepts (below 7) become 8.
 * </ul>
 */
final class Adapt {
    static final String COMPILER = "org.apache.maven.plugins:maven-compiler-plugin";
    static final String[] LEVELS = {"source", "target", "release", "testSource", "testTarget",
                                    "testRelease"};

    private Adapt() {
    }

    /** The changes made to the project (none: empty). */
    static List<String> adapt(MavenProject project) {
        List<String> done = new ArrayList<>();
        Plugin compiler = project.getPlugin(COMPILER);
        if (compiler != null) {
            for (Xpp3Dom conf : Participant.configurations(compiler)) {
                Xpp3Dom id = conf.getChild("compilerId");
                if (id != null && id.getValue() != null
                        && id.getValue().trim().startsWith("javac-with-errorprone")) {
                    remove(conf, "compilerId");
                    remove(conf, "forceJavacCompilerUse");
                    done.add("compiler: javac instead of " + id.getValue().trim());
                }
                for (String level : LEVELS) {
                    Xpp3Dom child = conf.getChild(level);
                    if (child != null && tooOld(child.getValue())) {
                        done.add("compiler: " + level + " " + child.getValue().trim() + " -> 8");
                        child.setValue("8");
                    }
                }
            }
            if (done.stream().anyMatch(s -> s.startsWith("compiler: javac instead"))) {
                List<Dependency> keep = new ArrayList<>();
                for (Dependency d : compiler.getDependencies()) {
                    if (!d.getGroupId().equals("com.google.errorprone")
                            && !d.getArtifactId().startsWith("plexus-compiler-javac-errorprone")) {
                        keep.add(d);
                    }
                }
                compiler.setDependencies(keep);
            }
        }
        Properties props = project.getProperties();
        for (String level : new String[] {"source", "target", "release"}) {
            String name = "maven.compiler." + level;
            if (tooOld(props.getProperty(name))) {
                done.add(name + " " + props.getProperty(name) + " -> 8");
                props.setProperty(name, "8");
            }
        }
        return done;
    }

    static boolean tooOld(String level) {
        if (level == null) {
            return false;
        }
        String v = level.trim();
        return v.equals("1.1") || v.equals("1.2") || v.equals("1.3") || v.equals("1.4")
                || v.equals("1.5") || v.equals("1.6") || v.equals("5") || v.equals("6");
    }

    static void remove(Xpp3Dom conf, String name) {
        for (int i = conf.getChildCount() - 1; i >= 0; i--) {
            if (name.equals(conf.getChild(i).getName())) {
                conf.removeChild(i);
            }
        }
    }
}
