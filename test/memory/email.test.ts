/**
 * Email parsing without a dependency: RFC 5322 headers (folded), RFC 2047 encoded words, MIME
 * multipart (text/plain preferred, else stripped text/html), quoted-printable, base64,
 * charsets, attachments; mbox splitting; and what counts as a corrupt message.
 */
import { describe, expect, it } from 'vitest';
import { ParseError, htmlToText, parseEmail, parseFile, splitMbox } from '../../src/memory/index.js';
import { decodeHeaderValue, decodeQuotedPrintable, parseParams } from '../../src/memory/sources/mime.js';

const crlf = (s: string) => s.replace(/\r?\n/g, '\r\n');
const latin1 = (s: string) => Buffer.from(s, 'utf8').toString('latin1');

describe('header values', () => {
  it.each([
    ['=?UTF-8?B?SGFsbG8gV8O2cmxk?=', 'Hallo Wörld'],
    ['=?ISO-8859-1?Q?Caf=E9_au_lait?=', 'Café au lait'],
    ['=?utf-8?q?a?= =?utf-8?q?b?=', 'ab'],
    ['Re: =?UTF-8?Q?Gr=C3=BC=C3=9Fe?= from Berlin', 'Re: Grüße from Berlin'],
    ['=?windows-1252?Q?=93quoted=94?=', '“quoted”'],
    ['=?UTF-8*en?B?w6k=?=', 'é'],
    ['=?bogus-charset?B?aGk=?=', 'hi'],
    ['=?UTF-8?B?###?=', '=?UTF-8?B?###?='],
    ['plain text', 'plain text'],
  ])('%s → %s', (raw, decoded) => {
    expect(decodeHeaderValue(raw)).toBe(decoded);
  });

  it('reads raw UTF-8 header bytes (RFC 6532), and raw 8-bit bytes that are not UTF-8 as Windows-1252', () => {
    expect(decodeHeaderValue(latin1('Größe'))).toBe('Größe');
    expect(decodeHeaderValue('caf\xe9 \x93ok\x94')).toBe('café “ok”');
  });

  it('parses parameters: quoted, escaped, RFC 2231 encoded and continued', () => {
    expect(parseParams('text/plain; charset="utf-8"; format=flowed')).toEqual({ value: 'text/plain', params: { charset: 'utf-8', format: 'flowed' } });
    expect(parseParams('attachment; filename="a \\"b\\"; c.txt"').params.filename).toBe('a "b"; c.txt');
    expect(parseParams("attachment; filename*=UTF-8''na%C3%AFve%20plan.pdf").params.filename).toBe('naïve plan.pdf');
    expect(parseParams('attachment; filename*0="long "; filename*1="name.txt"').params.filename).toBe('long name.txt');
  });

  it('decodes quoted-printable with soft line breaks', () => {
    expect(new TextDecoder().decode(decodeQuotedPrintable('caf=C3=A9 =\r\nau lait=3D ok = stray'))).toBe('café au lait= ok = stray');
  });
});

describe('parseEmail', () => {
  it('takes subject, sender, recipients, date and message id from folded, encoded headers', () => {
    const email = parseEmail(
      crlf(`From: =?UTF-8?Q?J=C3=BCrgen_M=C3=BCller?= <juergen@example.com>
To: Ann <ann@example.com>,
 Bob <bob@example.com>
Subject: =?UTF-8?B?UXVhcnRlcmx5IHJlcG9ydA==?=
  due Friday
Date: Tue, 1 Jul 2025 10:52:37 +0200 (CEST)
Message-ID: <abc123@example.com>

Hello,
the report is due.
`),
    );
    expect(email).toMatchObject({
      subject: 'Quarterly report due Friday',
      from: { name: 'Jürgen Müller', address: 'juergen@example.com' },
      to: 'Ann <ann@example.com>, Bob <bob@example.com>',
      date: '2025-07-01T08:52:37.000Z',
      messageId: 'abc123@example.com',
      text: 'Hello,\nthe report is due.',
      attachments: [],
    });
  });

  it('prefers text/plain in multipart/alternative and decodes quoted-printable in its charset', () => {
    const email = parseEmail(
      crlf(`From: a@example.com
Subject: Alt
Content-Type: multipart/alternative; boundary="XYZ"

preamble
--XYZ
Content-Type: text/html; charset=utf-8

<p>HTML version</p>
--XYZ
Content-Type: text/plain; charset=iso-8859-1
Content-Transfer-Encoding: quoted-printable

Caf=E9 plain version with a long line that is soft=
 broken
--XYZ--
epilogue
`),
    );
    expect(email.text).toBe('Café plain version with a long line that is soft broken');
  });

  it('falls back to stripped text/html, with entities decoded and scripts dropped', () => {
    const html =
      '<html><head><style>p{}</style></head><body><p>Dear&nbsp;Ann,</p><script>alert(1)</script><div>Total: 5&euro; &amp; more&#33;</div></body></html>';
    const email = parseEmail(
      crlf(
        `From: a@example.com\nSubject: H\nContent-Type: text/html; charset=utf-8\nContent-Transfer-Encoding: base64\n\n${Buffer.from(html).toString('base64')}\n`,
      ),
    );
    expect(email.text).toBe('Dear Ann,\n\nTotal: 5€ & more!');
    expect(htmlToText('a<br>b')).toBe('a\nb');
  });

  it('reads the text of multipart/mixed and names the attachments', () => {
    const email = parseEmail(
      crlf(`From: a@example.com
Subject: With files
Content-Type: multipart/mixed; boundary=outer

--outer
Content-Type: multipart/alternative; boundary=inner

--inner
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: base64

${Buffer.from('Plain body ✓').toString('base64')}
--inner
Content-Type: text/html

<b>html body</b>
--inner--
--outer
Content-Type: application/pdf; name="invoice.pdf"
Content-Disposition: attachment; filename*=UTF-8''Rechnung%20M%C3%A4rz.pdf
Content-Transfer-Encoding: base64

JVBERi0xLjQK
--outer
Content-Type: image/png

iVBORw0KGgo=
--outer--
`),
    );
    expect(email.text).toBe('Plain body ✓');
    expect(email.attachments).toEqual(['Rechnung März.pdf', 'image/png']);
  });

  it.each([
    ['an empty message', '', /empty message/],
    ['text with no header block', 'Just some text\nwithout headers\n', /line 1 of the header block is not a "Name: value" header/],
    ['a header block with no email header', 'X-Custom: 1\n\nbody\n', /none of From, Subject, Date or Message-ID/],
    ['multipart without a boundary', 'From: a@b.c\nContent-Type: multipart/mixed\n\nbody\n', /multipart\/mixed part has no boundary/],
    ['a boundary that never appears', 'From: a@b.c\nContent-Type: multipart/mixed; boundary=zz\n\nno parts here\n', /boundary "zz" never appears/],
    [
      'invalid base64 in a text part',
      'From: a@b.c\nContent-Transfer-Encoding: base64\n\n%%% not base64 %%%\n',
      /text\/plain part cannot be decoded: invalid base64/,
    ],
    ['a message starting with an empty line', '\nFrom: a@b.c\n', /starts with an empty line/],
  ])('refuses %s with a reason', (_what, raw, reason) => {
    expect(() => parseEmail(raw)).toThrow(ParseError);
    expect(() => parseEmail(raw)).toThrow(reason);
  });
});

describe('splitMbox', () => {
  it('splits on From_ lines after an empty line and unescapes >From', () => {
    const messages = splitMbox(`From alice@example.com Mon Jan  1 00:00:00 2024
From: alice@example.com
Subject: One

Hello
>From the start
>>From two levels
From inside a paragraph is not a separator

From bob@example.com Mon Jan  1 00:00:01 2024
From: bob@example.com
Subject: Two

Bye
`);
    expect(messages.map((m) => m.index)).toEqual([1, 2]);
    expect(parseEmail(messages[0]!.raw).text).toBe('Hello\nFrom the start\n>From two levels\nFrom inside a paragraph is not a separator');
    expect(parseEmail(messages[1]!.raw).subject).toBe('Two');
  });

  it('refuses a file that does not start with a separator', () => {
    expect(() => splitMbox('Subject: x\n\nbody')).toThrow(/not an mbox/);
  });
});

describe('parseFile', () => {
  it('markdown: the first heading (or front-matter title) is the title', () => {
    expect(parseFile('notes/plan.md', Buffer.from('intro\n# Garden plan\nPlant tomatoes')).documents[0]).toMatchObject({
      suffix: '',
      title: 'Garden plan',
      source_kind: 'file',
      metadata: { path: 'notes/plan.md', format: 'md' },
    });
    expect(parseFile('a.md', Buffer.from('---\ntitle: "From front matter"\n---\n# Heading')).documents[0]!.title).toBe('From front matter');
    expect(parseFile('no-heading.md', Buffer.from('text')).documents[0]!.title).toBe('no-heading');
  });

  it('text: the file name is the title; Windows-1252 is read when not UTF-8; binary is refused', () => {
    const doc = parseFile('todo.txt', Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0d, 0x0a])).documents[0]!;
    expect(doc).toMatchObject({ title: 'todo', body: 'café\n' });
    expect(() => parseFile('bin.txt', Buffer.from([0x61, 0x00, 0x62]))).toThrow(/binary data/);
  });

  it('an mbox gives one email document per message with stable ids, skipping bad messages with a reason', () => {
    const mbox = [
      'From x Mon Jan  1 00:00:00 2024\nFrom: a@example.com\nSubject: First\nMessage-ID: <one@x>\n\nBody one\n',
      'From x Mon Jan  1 00:00:00 2024\nX-Only: nothing useful\n\nBroken\n',
      'From x Mon Jan  1 00:00:00 2024\nFrom: b@example.com\nSubject: No id\n\nBody two\n',
      'From x Mon Jan  1 00:00:00 2024\nFrom: a@example.com\nSubject: Dup\nMessage-ID: <one@x>\n\nBody three\n',
    ].join('\n');
    const parsed = parseFile('box.mbox', Buffer.from(mbox));
    expect(parsed.documents.map((d) => d.suffix)).toEqual(['#one@x', expect.stringMatching(/^#sha:[0-9a-f]{16}$/), '#one@x~2']);
    expect(parsed.documents[0]).toMatchObject({
      source_kind: 'email',
      title: 'First',
      metadata: { path: 'box.mbox', format: 'mbox', from: 'a@example.com', message_id: 'one@x' },
    });
    expect(parsed.documents[0]!.body).toBe('From: a@example.com\n\nBody one');
    expect(parsed.skipped).toEqual([{ part: '#2', reason: expect.stringMatching(/none of From, Subject, Date or Message-ID/) }]);
    expect(parseFile('box.mbox', Buffer.from(mbox)).documents[1]!.suffix).toBe(parsed.documents[1]!.suffix);
  });
});
