package repogym.maven;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import javax.inject.Named;
import javax.inject.Singleton;
import org.apache.maven.AbstractMavenLifecycleParticipant;
import org.apache.maven.execution.MavenSession;
import org.apache.maven.model.Dependency;
import org.apache.maven.model.Plugin;
import org.apache.maven.model.PluginExecution;
import org.apache.maven.project.MavenProject;
import org.codehaus.plexus.util.xml.Xpp3Dom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Once the projects are read: adapts each build to the environment's JDK ({@link Adapt}),
 * and, in a test run, points each module's Surefire at the run's own reports folder, forces
 * the settings grading depends on over the POM's, and plants the canary test.
 */
@Named("repogym")
@Singleton
public class Participant extends AbstractMavenLifecycleParticipant {
    static final String SUREFIRE = "org.apache.maven.plugins:maven-surefire-plugin";
    private static final Logger LOG = LoggerFactory.getLogger(Participant.class);

    @Override
    public void afterProjectsRead(MavenSession session) {
        Run run = Run.load(session.getUserProperties());
        if (run != null) {
            Tap.install();
        }
        File top = session.getTopLevelProject().getBasedir();
        int index = 0;
        for (MavenProject project : session.getProjects()) {
            String dir = relative(top, project.getBasedir());
            for (String change : Adapt.adapt(project)) {
                LOG.info("repogym: {} in {}", change, dir);
                if (run != null) {
                    run.emit("adapted", "module", index, "change", change);
                }
            }
            if (run != null) {
                prepare(run, project, index, dir);
            }
            index++;
        }
    }

    private static void prepare(Run run, MavenProject project, int index, String dir) {
        Plugin surefire = project.getPlugin(SUREFIRE);
        run.modules.put(Run.key(project), index);
        String canary = "";
        if (surefire != null) {
            configure(surefire, run, dir, new File(run.out, "reports/" + index).getPath());
            canary = plant(project, run, surefire, dir);
        }
        run.emit("module", "index", index, "dir", dir, "surefire", surefire != null,
                 "canary", canary);
    }

    static String relative(File top, File dir) {
        String rel = top.toPath().toAbsolutePath().normalize()
                .relativize(dir.toPath().toAbsolutePath().normalize()).toString();
        return rel.isEmpty() ? "." : rel;
    }

    private static void configure(Plugin surefire, Run run, String dir, String reports) {
        String timeout = run.plan.getProperty("timeout." + dir, run.plan.getProperty("timeout", ""));
        String[][] forced = {
            {"reportsDirectory", reports},
            {"testFailureIgnore", "true"},
            {"rerunFailingTestsCount", "0"},
            {"trimStackTrace", "true"},
            {"failIfNoSpecifiedTests", "false"},
            {"failIfNoTests", "false"},
            {"redirectTestOutputToFile", "true"},
            {"printSummary", "true"},
            {"forkedProcessTimeoutInSeconds", timeout},
            {"skipAfterFailureCount", run.plan.getProperty("skipAfterFailureCount", "")},
            {"test", run.plan.getProperty("test", "")},
        };
        for (Xpp3Dom conf : configurations(surefire)) {
            for (String[] kv : forced) {
                if (!kv[1].isEmpty()) {
                    set(conf, kv[0], kv[1]);
                }
            }
            if (conf.getChild("disableXmlReport") != null) {
                set(conf, "disableXmlReport", "false");
            }
            if (conf.getChild("statelessTestsetReporter") != null) {
                Adapt.remove(conf, "statelessTestsetReporter");  // Surefire's own XML
            }
            Xpp3Dom forkCount = conf.getChild("forkCount");
            if (forkCount != null && "0".equals(String.valueOf(forkCount.getValue()).trim())) {
                set(conf, "forkCount", "1");  // never run tests inside Maven's own JVM
            }
            Xpp3Dom forkMode = conf.getChild("forkMode");
            if (forkMode != null && "never".equals(String.valueOf(forkMode.getValue()).trim())) {
                set(conf, "forkMode", "once");
            }
        }
    }

    /** The plugin's own configuration and each execution's, made where missing. */
    static Xpp3Dom[] configurations(Plugin plugin) {
        List<PluginExecution> executions = plugin.getExecutions();
        Xpp3Dom[] out = new Xpp3Dom[executions.size() + 1];
        if (plugin.getConfiguration() == null) {
            plugin.setConfiguration(new Xpp3Dom("configuration"));
        }
        out[0] = (Xpp3Dom) plugin.getConfiguration();
        for (int i = 0; i < executions.size(); i++) {
            PluginExecution execution = executions.get(i);
            if (execution.getConfiguration() == null) {
                execution.setConfiguration(new Xpp3Dom("configuration"));
            }
            out[i + 1] = (Xpp3Dom) execution.getConfiguration();
        }
        return out;
    }

    static void set(Xpp3Dom conf, String name, String value) {
        Adapt.remove(conf, name);
        Xpp3Dom child = new Xpp3Dom(name);
        child.setValue(value);
        conf.addChild(child);
    }

    /**
     * Plants the canary in the module's test sources: a test in the default package that
     * must fail (JUnit Jupiter or JUnit 4, as the module declares). Not in a module the
     * plan leaves out, with no test sources, with neither framework, or whose Surefire
     * picks tests by group or category (the canary would not be picked).
     *
     * @return the canary's class name, or "" when none was planted
     */
    private static String plant(MavenProject project, Run run, Plugin surefire, String dir) {
        String name = run.plan.getProperty("canary", "");
        String only = run.plan.getProperty("canary.modules");
        String flavour = flavour(project);
        File root = new File(project.getBuild().getTestSourceDirectory());
        if (name.isEmpty() || flavour == null || !root.isDirectory()
                || (only != null && !("\n" + only + "\n").contains("\n" + dir + "\n"))) {
            return "";
        }
        for (Xpp3Dom conf : configurations(surefire)) {
            if (conf.getChild("groups") != null) {
                return "";
            }
        }
        String annotation = flavour.equals("jupiter") ? "org.junit.jupiter.api.Test" : "org.junit.Test";
        String source = "public class " + name + " {\n  @" + annotation + "\n"
                + "  public void canary() {\n"
                + "    throw new AssertionError(\"repogym canary: this test must fail\");\n  }\n}\n";
        File file = new File(root, name + ".java");
        try {
            Files.write(file.toPath(), source.getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new IllegalStateException("repogym: cannot plant the canary in " + root, e);
        }
        run.canaries.put(Run.key(project), file);
        for (Xpp3Dom conf : configurations(surefire)) {
            Xpp3Dom includes = conf.getChild("includes");
            if (includes != null) {
                Xpp3Dom include = new Xpp3Dom("include");
                include.setValue("**/" + name + ".java");
                includes.addChild(include);
            }
        }
        return name;
    }

    /** The framework the module's tests are written for: JUnit Jupiter, JUnit 4, or none. */
    static String flavour(MavenProject project) {
        boolean junit4 = false;
        for (Dependency d : project.getDependencies()) {
            if (d.getGroupId().equals("org.junit.jupiter")) {
                return "jupiter";
            }
            junit4 |= d.getGroupId().equals("junit") && d.getArtifactId().equals("junit");
        }
        return junit4 ? "junit4" : null;
    }
}
