/**
 * The shell: token, connection state, banners, tabs. Tabs render only once the page holds a
 * token the daemon has not refused; a 401 on any call brings the token help back.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { LiveEvents, type LiveSnapshot } from '../api/live.js';
import { onConnectionSignal } from '../api/rpc.js';
import { captureToken, clearToken, setToken } from '../api/token.js';
import { tabs } from '../tabs/index.js';
import { Banners } from './Banners.js';
import { OFFLINE_REASON, ShellContext, type NoticeAction, type NoticeTone, type Shell } from './context.js';
import { Notices, type Notice } from './Notices.js';
import { useRpcResource } from './resource.js';
import { TabBar } from './TabBar.js';
import { Inbox } from './inbox/Inbox.js';
import { countByTab, titleWith } from './inbox/items.js';
import { useInbox } from './inbox/useInbox.js';
import { ThemeToggle } from './ThemeToggle.js';
import { applyTheme, readTheme } from './theme.js';
import { TokenHelp } from './TokenHelp.js';
import { clockTime } from '../ui/format.js';
import './theme.css';

// The remembered theme, before the first paint.
applyTheme(readTheme());

type Auth = 'ok' | 'missing' | 'rejected';

export function App() {
  const [auth, setAuth] = useState<Auth>(() => (captureToken() ? 'ok' : 'missing'));
  useEffect(
    () =>
      onConnectionSignal((s) => {
        if (s === 'unauthorized') {
          clearToken();
          setAuth((a) => (a === 'missing' ? a : 'rejected'));
        }
      }),
    [],
  );
  if (auth !== 'ok') {
    return (
      <TokenHelp
        rejected={auth === 'rejected'}
        onToken={(t) => {
          setToken(t);
          setAuth('ok');
        }}
      />
    );
  }
  return <Connected />;
}

const STATUS_EVENTS = ['tick.started', 'tick.finished', 'status.changed', 'config.file'] as const;

function Connected() {
  const live = useMemo(() => new LiveEvents(), []);
  const [liveState, setLiveState] = useState<LiveSnapshot>(live.state);
  const [rpcDown, setRpcDown] = useState(false);
  const [notices, setNotices] = useState<Notice[]>([]);
  const [active, setActive] = useState(() => tabFromHash());
  const [route, setRoute] = useState(() => routeFromHash());
  const [staleSince, setStaleSince] = useState<number | null>(null);
  const noticeId = useRef(0);

  useEffect(() => {
    const offWatch = live.watch(setLiveState);
    live.start();
    return () => {
      offWatch();
      live.stop();
    };
  }, [live]);

  // The daemon is unreachable when a call fails to reach it; the first call that gets through
  // clears that and retries the event stream at once instead of waiting out its backoff.
  const rpcDownRef = useRef(false);
  useEffect(
    () =>
      onConnectionSignal((s) => {
        if (s === 'unauthorized') return;
        const down = s === 'unreachable';
        if (rpcDownRef.current && !down) live.retryNow();
        // What is on screen is as of the moment the daemon stopped answering.
        if (down && !rpcDownRef.current) setStaleSince(Date.now());
        if (!down) setStaleSince(null);
        rpcDownRef.current = down;
        setRpcDown(down);
      }),
    [live],
  );

  useEffect(() => {
    const onHash = () => {
      setActive(tabFromHash());
      setRoute(routeFromHash());
    };
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  // Status is polled while the stream is down, so the page notices by itself when the daemon is back.
  const status = useRpcResource('subconscious.status', {}, { live, liveState, events: STATUS_EVENTS, pollWhile: () => true });

  // When the stream drops, ask the daemon at once: that tells "unreachable" from "stream only".
  const reloadStatus = status.reload;
  useEffect(() => {
    if (liveState.state === 'down') void reloadStatus();
  }, [liveState.state, reloadStatus]);

  const notify = useCallback((text: string, tone: NoticeTone = 'info', action?: NoticeAction) => {
    const id = ++noticeId.current;
    setNotices((n) => [...n.slice(-3), { id, text, tone, action }]);
    // A notice with an action (Undo) stays long enough to be used.
    setTimeout(() => setNotices((n) => n.filter((x) => x.id !== id)), tone === 'error' || action ? 12_000 : 5000);
  }, []);

  const navigate = useCallback((id: string, detail?: string) => {
    if (!tabs.some((t) => t.id === id)) return;
    const rest = detail ? `/${encodeURIComponent(detail)}` : '';
    window.location.hash = `#/${id}${rest}`;
    setActive(id);
    setRoute(detail ?? '');
    window.scrollTo(0, 0);
  }, []);

  const offlineReason = rpcDown || staleSince !== null ? OFFLINE_REASON : null;
  const shell: Shell = useMemo(
    () => ({ live, liveState, status, notify, navigate, route, staleSince, offlineReason }),
    [live, liveState, status, notify, navigate, route, staleSince, offlineReason],
  );
  const tab = tabs.find((t) => t.id === active) ?? tabs[0]!;
  const retry = useCallback(() => {
    live.retryNow();
    void status.reload();
  }, [live, status]);

  return (
    <ShellContext.Provider value={shell}>
      <Page tab={tab} navigate={navigate} liveState={liveState} rpcDown={rpcDown} retry={retry} staleSince={staleSince} status={status.data} />
      <Notices notices={notices} dismiss={(id) => setNotices((n) => n.filter((x) => x.id !== id))} />
    </ShellContext.Provider>
  );
}

/** The page inside the shell: it reads "Needs you" once, for the inbox, the tabs' badges and the title. */
function Page(props: {
  tab: (typeof tabs)[number];
  navigate: (id: string) => void;
  liveState: LiveSnapshot;
  rpcDown: boolean;
  retry: () => void;
  staleSince: number | null;
  status: Shell['status']['data'];
}) {
  const { tab, navigate, liveState, rpcDown, retry, staleSince, status } = props;
  const inbox = useInbox();
  const counts = useMemo(() => countByTab(inbox.items), [inbox.items]);
  useEffect(() => {
    document.title = titleWith(inbox.ready ? inbox.items.length : 0);
  }, [inbox.items.length, inbox.ready]);
  const disabledReason = rpcDown || staleSince !== null ? OFFLINE_REASON : null;
  return (
    <>
      <div className="app">
        <header className="topbar">
          <span className="brand">subconscious</span>
          {/* A daemon that does not answer calls is not live, even while the event stream still looks open (the banner says the same). */}
          <span
            className={`live live-${rpcDown ? 'down' : liveState.state}`}
            data-testid="live-state"
            data-state={liveState.state}
            data-answers={rpcDown ? 'no' : 'yes'}
          >
            <span className="live-dot" aria-hidden="true" />
            {rpcDown ? 'Offline' : liveState.state === 'open' ? 'Live' : liveState.state === 'connecting' ? 'Connecting…' : 'Offline'}
          </span>
          <ThemeToggle />
          <TabBar tabs={tabs} active={tab.id} onSelect={(id) => navigate(id)} counts={counts} />
        </header>
        <Banners liveState={liveState} rpcDown={rpcDown} worlds={status?.instances ?? []} retry={retry} />
        <Inbox items={inbox.items} answered={inbox.answered} ready={inbox.ready} disabledReason={disabledReason} reload={inbox.reload} />
        <main
          role="tabpanel"
          id={`panel-${tab.id}`}
          aria-labelledby={`tab-${tab.id}`}
          className={`panel${staleSince !== null ? ' stale' : ''}`}
          data-stale={staleSince !== null}
          tabIndex={-1}
        >
          {staleSince !== null && (
            <p className="stale-note" role="status" data-testid="stale-note">
              <strong>Not live:</strong> what you see is as of {clockTime(staleSince)}, when the daemon stopped answering. It may be out of date until it
              answers again.
            </p>
          )}
          <tab.Component key={tab.id} />
        </main>
      </div>
    </>
  );
}

/** `#/skills/mail` → `skills`. */
function tabFromHash(): string {
  const id = window.location.hash.replace(/^#\/?/, '').split('/')[0] ?? '';
  return tabs.some((t) => t.id === id) ? id : (tabs[0]?.id ?? '');
}

/** `#/skills/mail` → `mail` (the rest of the address after the tab). */
function routeFromHash(): string {
  const rest = window.location.hash.replace(/^#\/?/, '').split('/').slice(1).join('/');
  try {
    return decodeURIComponent(rest);
  } catch {
    return rest;
  }
}
