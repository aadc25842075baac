// Runs Apache Curator's InterProcessMutex (Debian's Curator 5.4.0) against
// the ZooKeeper server named on the command line and prints one line per
// event: the transcript tests/curator.rs compares between a real ZooKeeper
// and the simulated server.
//
// The transcript is deterministic: the clients act in a forced order (the
// main thread waits for each waiting contender's node to appear before it
// goes on), every line is printed by the main thread, and the lock node's
// children are shown with the random UUID of Curator's protected mode
// masked, sorted by their sequence number.

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;

public class CuratorProbe {
    static final String LOCK = "/locks/probe";
    static String connect;

    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    // Each client its own CuratorFramework, so its own session.
    static CuratorFramework client(String name) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(4000)
                .connectionTimeoutMs(3000)
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                .build();
        c.start();
        if (!c.blockUntilConnected(10, TimeUnit.SECONDS)) {
            throw new IllegalStateException(name + " did not connect to " + connect);
        }
        return c;
    }

    // The lock node's children, the protected-mode UUID masked, in order
    // of their sequence number (the last ten characters).
    static List<String> children(CuratorFramework c) throws Exception {
        List<String> names = new ArrayList<>();
        for (String k : c.getChildren().forPath(LOCK)) {
            names.add(k.replaceAll("^_c_[0-9a-f-]{36}-", "_c_<uuid>-"));
        }
        names.sort((x, y) -> x.substring(x.length() - 10).compareTo(y.substring(y.length() - 10)));
        return names;
    }

    static void show(CuratorFramework c, String when) throws Exception {
        say("children " + when + ": " + children(c));
    }

    // Waits until the lock node has `n` children: a contender started on
    // another thread has queued.
    static void waitChildren(CuratorFramework c, int n) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (children(c).size() != n) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the lock never had " + n + " children: " + children(c));
            }
            Thread.sleep(10);
        }
    }

    // acquire() on a thread of its own (InterProcessMutex belongs to the
    // thread that acquires it): completes with whether it got the lock.
    static Future<Boolean> acquireLater(InterProcessMutex m, String name, boolean releaseAfter,
            CountDownLatch release) {
        CompletableFuture<Boolean> got = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                boolean ok = m.acquire(20, TimeUnit.SECONDS);
                got.complete(ok);
                if (ok && releaseAfter) {
                    release.await();
                    m.release();
                }
            } catch (Exception e) {
                got.complete(false);
            }
        }, name);
        t.setDaemon(true);
        t.start();
        return got;
    }

    public static void main(String[] args) throws Exception {
        connect = args[0];
        CuratorFramework a = client("a");
        CuratorFramework b = client("b");
        CuratorFramework c = client("c");
        say("three clients connected, each with its own session");
        InterProcessMutex ma = new InterProcessMutex(a, LOCK);
        InterProcessMutex mb = new InterProcessMutex(b, LOCK);
        InterProcessMutex mc = new InterProcessMutex(c, LOCK);

        say("a acquires: " + ma.acquire(5, TimeUnit.SECONDS));
        show(a, "with a holding");
        say("a acquires again (re-entrant): " + ma.acquire(5, TimeUnit.SECONDS));
        say("a owns it: " + ma.isAcquiredInThisProcess());
        show(a, "after a's second acquire");

        say("b acquires with a 500 ms timeout: " + mb.acquire(500, TimeUnit.MILLISECONDS));
        show(a, "after b timed out");

        Future<Boolean> cGot = acquireLater(mc, "c", false, null);
        waitChildren(a, 2);
        show(a, "with c waiting");

        ma.release();
        say("a released once: still held, " + ma.isAcquiredInThisProcess());
        show(a, "after a's first release");
        ma.release();
        say("a released twice");
        say("c acquires: " + cGot.get(20, TimeUnit.SECONDS));
        show(a, "with c holding");

        CountDownLatch bRelease = new CountDownLatch(1);
        Future<Boolean> bGot = acquireLater(mb, "b", true, bRelease);
        waitChildren(a, 2);
        show(a, "with b waiting");

        CountDownLatch cLost = new CountDownLatch(1);
        c.getConnectionStateListenable().addListener((client, state) -> {
            if (state == ConnectionState.LOST) {
                cLost.countDown();
            }
        });
        // The standard way to end a session from outside: a second handle
        // on the same session ID and password, closed.
        ZooKeeper zc = c.getZookeeperClient().getZooKeeper();
        CountDownLatch attached = new CountDownLatch(1);
        ZooKeeper killer = new ZooKeeper(connect, 4000, event -> {
            if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                attached.countDown();
            }
        }, zc.getSessionId(), zc.getSessionPasswd());
        if (!attached.await(10, TimeUnit.SECONDS)) {
            throw new IllegalStateException("could not attach to c's session");
        }
        killer.close();
        say("c's session ended from outside, c still thinking it holds the lock");
        say("b acquires: " + bGot.get(20, TimeUnit.SECONDS));
        show(a, "with b holding");
        say("c sees its session lost: " + cLost.await(20, TimeUnit.SECONDS));

        bRelease.countDown();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!children(a).isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        say("b released");
        show(a, "after b released");
        say("a acquires with a 1 s timeout: " + ma.acquire(1, TimeUnit.SECONDS));
        show(a, "with a holding again");
        ma.release();
        show(a, "at the end");
        say("the lock node remains: " + (a.checkExists().forPath(LOCK) != null));

        c.close();
        b.close();
        a.close();
        say("done");
        // Curator's and ZooKeeper's threads may linger; the transcript is
        // complete.
        System.exit(0);
    }
}
