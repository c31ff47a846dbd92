/**
 * A real Dovecot IMAP server (Debian's `dovecot-imapd`) for a test: its own config, passwd-file
 * users and maildirs in a temp folder, plaintext IMAP on a free loopback port, started as a child
 * process and stopped by `dispose()`. Nothing of the machine's own Dovecot is touched.
 *
 *   const imap = await startDovecot({ users: { ada: 'secret' } });
 *   await imap.append('ada', 'INBOX', rawMessage);
 *   await imap.dispose();
 *
 * Run as root (CI), the mail belongs to the `dovecot` user; otherwise to the current user. Under
 * CI=true a missing Dovecot fails the test (scripts/ensure-mail-servers.sh installs it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ImapFlow } from 'imapflow';

export const DOVECOT = '/usr/sbin/dovecot';

export interface Dovecot {
  host: string;
  port: number;
  dir: string;
  /** A connected, logged-in client for a user (the test's own, to append and expunge). */
  client(user: string): Promise<ImapFlow>;
  append(user: string, folder: string, raw: string): Promise<number>;
  /** Put messages straight into a user's INBOX maildir (as a local delivery would): fast for large mailboxes. */
  deliver(user: string, raws: readonly string[]): void;
  dispose(): Promise<void>;
}

/** Whether Dovecot can run here; under CI=true its absence is a failure, not a skip. */
export function dovecotAvailable(): boolean {
  const ok = existsSync(DOVECOT);
  if (!ok && process.env.CI === 'true') throw new Error(`${DOVECOT} is missing: run scripts/ensure-mail-servers.sh (apt-get install -y dovecot-imapd)`);
  return ok;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function systemUser(): { uid: number; gid: number; name: string } {
  if (process.getuid?.() === 0) {
    // Debian's package creates these; the mail is theirs, as Dovecot refuses to run mail as root.
    return { uid: uidOf('dovecot'), gid: gidOf('dovecot'), name: 'dovecot' };
  }
  const info = os.userInfo();
  return { uid: info.uid, gid: info.gid, name: info.username };
}

function uidOf(name: string): number {
  const line = readPasswd('/etc/passwd', name);
  return Number(line[2]);
}
function gidOf(name: string): number {
  const line = readPasswd('/etc/group', name);
  return Number(line[2]);
}
function readPasswd(file: string, name: string): string[] {
  const text = readFileSync(file, 'utf8');
  const line = text.split('\n').find((l) => l.startsWith(`${name}:`));
  if (!line) throw new Error(`no ${name} in ${file}: is dovecot-imapd installed?`);
  return line.split(':');
}

export async function startDovecot(opts: { users: Record<string, string> }): Promise<Dovecot> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'subc-dovecot-'));
  const port = await freePort();
  const owner = systemUser();
  // Dovecot's auth and mail processes run as the owner, and must reach the passwd file and maildirs.
  chmodSync(dir, 0o755);
  const home = path.join(dir, 'home');
  mkdirSync(home);
  mkdirSync(path.join(dir, 'run'));
  for (const user of Object.keys(opts.users)) mkdirSync(path.join(home, user));
  const chownTree = (p: string) => chownSync(p, owner.uid, owner.gid);
  chownTree(home);
  for (const user of Object.keys(opts.users)) chownTree(path.join(home, user));
  writeFileSync(
    path.join(dir, 'passwd'),
    Object.entries(opts.users)
      .map(([u, p]) => `${u}:{PLAIN}${p}:${owner.uid}:${owner.gid}::${path.join(home, u)}::`)
      .join('\n') + '\n',
  );
  const conf = path.join(dir, 'dovecot.conf');
  writeFileSync(
    conf,
    `base_dir = ${path.join(dir, 'run')}
state_dir = ${path.join(dir, 'run')}
log_path = ${path.join(dir, 'dovecot.log')}
instance_name = subc-test-${port}
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
# A wrong password is answered at once (the tests try some on purpose).
auth_failure_delay = 0
default_internal_user = ${owner.name}
default_internal_group = ${owner.name === 'dovecot' ? 'dovecot' : owner.name}
default_login_user = ${owner.name === 'dovecot' ? 'dovenull' : owner.name}
first_valid_uid = 1
first_valid_gid = 1
mail_uid = ${owner.uid}
mail_gid = ${owner.gid}
mail_location = maildir:~/Maildir
namespace inbox {
  inbox = yes
  separator = /
  mailbox Sent {
    auto = create
  }
}
passdb {
  driver = passwd-file
  args = scheme=PLAIN ${path.join(dir, 'passwd')}
}
userdb {
  driver = passwd-file
  args = ${path.join(dir, 'passwd')}
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    port = 0
  }
}
service anvil {
  chroot =
}
service imap-login {
  chroot =
}
`,
  );
  const child: ChildProcess = spawn(DOVECOT, ['-F', '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitForPort(port, child, () => stderr, dir);

  const clients: ImapFlow[] = [];
  const client = async (user: string) => {
    const c = new ImapFlow({ host: '127.0.0.1', port, secure: false, auth: { user, pass: opts.users[user]! }, logger: false });
    await c.connect();
    clients.push(c);
    return c;
  };
  let deliveries = 0;
  let appender: ImapFlow | null = null;
  let appenderUser = '';
  return {
    host: '127.0.0.1',
    port,
    dir,
    client,
    async append(user, folder, raw) {
      if (!appender || appenderUser !== user) {
        await appender?.logout();
        appender = await client(user);
        appenderUser = user;
      }
      const res = await appender.append(folder, raw);
      if (!res) throw new Error(`append to ${folder} failed`);
      return res.uid ?? 0;
    },
    deliver(user, raws) {
      const maildir = path.join(home, user, 'Maildir');
      for (const sub of ['', 'cur', 'new', 'tmp']) {
        const d = path.join(maildir, sub);
        if (!existsSync(d)) mkdirSync(d);
        chownTree(d);
      }
      const stamp = Math.floor(Date.now() / 1000);
      for (const raw of raws) {
        const file = path.join(maildir, 'new', `${stamp}.M${deliveries++}P${process.pid}.bench`);
        writeFileSync(file, raw);
        chownTree(file);
      }
    },
    async dispose() {
      for (const c of clients) await c.logout().catch(() => c.close());
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function waitForPort(port: number, child: ChildProcess, stderr: () => string, dir: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`dovecot exited (${child.exitCode}): ${stderr()} (config in ${dir})`);
    const open = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.end();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`dovecot did not listen on ${port}: ${stderr()}`);
}
