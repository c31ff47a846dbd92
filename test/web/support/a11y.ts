/**
 * Two checks a person would make with their eyes, done in the page: every piece of visible text
 * keeps WCAG AA contrast against what is really behind it, and every control reached with Tab
 * shows a focus ring (and is not invisible).
 */
import type { Page } from 'playwright-core';

export interface ContrastFailure {
  text: string;
  ratio: number;
  needed: number;
  color: string;
  background: string;
}

/**
 * Text contrast of every visible text node: 4.5:1, or 3:1 for large text (24 px, or 18.66 px
 * bold). The background is composed from the element's ancestors' background colours (alpha
 * included). Disabled controls are exempt (WCAG 1.4.3), as are form fields' own values.
 */
export async function contrastFailures(page: Page): Promise<ContrastFailure[]> {
  return page.evaluate(() => {
    type RGBA = [number, number, number, number];
    // Chrome resolves every colour (hex, color-mix, …) to rgb()/rgba() or color(srgb …).
    const parse = (c: string): RGBA => {
      const nums = (c.match(/[\d.]+%?/g) ?? []).map((x) => (x.endsWith('%') ? Number(x.slice(0, -1)) / 100 : Number(x)));
      if (c.startsWith('color(srgb')) return [nums[0]! * 255, nums[1]! * 255, nums[2]! * 255, nums[3] ?? 1];
      return [nums[0] ?? 0, nums[1] ?? 0, nums[2] ?? 0, nums[3] ?? 1];
    };
    const over = (top: RGBA, bottom: RGBA): RGBA => {
      const a = top[3] + bottom[3] * (1 - top[3]);
      if (a === 0) return [0, 0, 0, 0];
      const mix = (i: number) => (top[i]! * top[3] + bottom[i]! * bottom[3] * (1 - top[3])) / a;
      return [mix(0), mix(1), mix(2), a];
    };
    const luminance = (c: RGBA) =>
      [c[0], c[1], c[2]]
        .map((v) => v / 255)
        .map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4))
        .reduce((acc, v, i) => acc + v * [0.2126, 0.7152, 0.0722][i]!, 0);
    const ratio = (a: RGBA, b: RGBA) => {
      const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
      return (x! + 0.05) / (y! + 0.05);
    };
    const backgroundOf = (el: Element): RGBA => {
      const layers: RGBA[] = [];
      for (let e: Element | null = el; e; e = e.parentElement) {
        const bg = parse(getComputedStyle(e).backgroundColor);
        if (bg[3] > 0) layers.push(bg);
        if (bg[3] >= 1) break;
      }
      let out: RGBA = [255, 255, 255, 1]; // the canvas
      for (const layer of layers.reverse()) out = over(layer, out);
      return out;
    };
    const failures: ContrastFailure[] = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.textContent?.trim();
      const el = node.parentElement;
      if (!text || !el) continue;
      if (el.closest('option, select, textarea, noscript, script, style, :disabled')) continue;
      const rect = el.getBoundingClientRect();
      if (rect.width <= 1 || rect.height <= 1) continue; // visually hidden (screen-reader text)
      if (!el.checkVisibility({ opacityProperty: true, visibilityProperty: true })) continue;
      const style = getComputedStyle(el);
      const inSvg = el instanceof SVGElement;
      let fg = parse(inSvg ? style.fill : style.color);
      const bg = backgroundOf(el);
      fg = over(fg, bg);
      let opacity = 1;
      for (let e: Element | null = el; e; e = e.parentElement) opacity *= Number(getComputedStyle(e).opacity);
      if (opacity < 1) fg = over([fg[0], fg[1], fg[2], opacity], bg);
      const size = parseFloat(style.fontSize);
      const bold = Number(style.fontWeight) >= 700;
      const needed = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
      const r = ratio(fg, bg);
      if (r + 0.005 < needed) {
        failures.push({
          text: text.slice(0, 60),
          ratio: Math.round(r * 100) / 100,
          needed,
          color: inSvg ? style.fill : style.color,
          background: `rgb(${bg.slice(0, 3).map(Math.round).join(', ')})`,
        });
      }
    }
    return failures;
  });
}

export interface FocusStop {
  what: string;
  /** Why the focus is not visible, or null when it is. */
  problem: string | null;
}

/**
 * Press Tab from the top of the page until focus comes back around (or `max` stops), and report
 * for each stop whether a person can see where the focus is: an outline of at least 2 px that is
 * not transparent, on an element that is itself visible.
 */
export async function walkFocus(page: Page, max = 80): Promise<FocusStop[]> {
  await page.evaluate(() => {
    (document.activeElement as HTMLElement | null)?.blur();
    window.scrollTo(0, 0);
  });
  const stops: FocusStop[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    // Focus may start a transition (the delete button fades in); judge the settled state.
    await page.evaluate(() =>
      Promise.all(
        document
          .getAnimations()
          .filter((a) => a instanceof CSSTransition)
          .map((a) => a.finished.catch(() => undefined)),
      ),
    );
    const stop = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null;
      if (!el || el === document.body) return null;
      const name = el.getAttribute('aria-label') || el.textContent?.trim() || el.getAttribute('placeholder') || el.id;
      const path: string[] = [];
      for (let e: Element | null = el; e && e !== document.body; e = e.parentElement)
        path.push(`${e.tagName}${e.parentElement ? [...e.parentElement.children].indexOf(e) : ''}`);
      const what = `${el.tagName.toLowerCase()}${el.getAttribute('role') ? `[role=${el.getAttribute('role')}]` : ''} "${(name ?? '').slice(0, 50)}"`;
      const s = getComputedStyle(el);
      const width = parseFloat(s.outlineWidth);
      const transparent = /rgba\(.*,\s*0\)$/.test(s.outlineColor) || s.outlineColor === 'transparent';
      let problem: string | null = null;
      if (!el.matches(':focus-visible')) problem = 'not :focus-visible';
      else if (s.outlineStyle === 'none' || width < 2 || transparent) problem = `outline ${s.outlineStyle} ${s.outlineWidth} ${s.outlineColor}`;
      else if (!el.checkVisibility({ opacityProperty: true, visibilityProperty: true })) problem = 'the focused element is invisible';
      else {
        let opacity = 1;
        for (let e: Element | null = el; e; e = e.parentElement) opacity *= Number(getComputedStyle(e).opacity);
        if (opacity < 0.9) problem = `the focused element is faded (opacity ${opacity})`;
      }
      return { key: path.join('/'), what, problem };
    });
    if (!stop) continue;
    if (seen.has(stop.key)) break;
    seen.add(stop.key);
    stops.push({ what: stop.what, problem: stop.problem });
  }
  return stops;
}
