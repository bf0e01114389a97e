import type { SdkToolInput } from '../../sdk-gen/index.ts'

/** A representative set of tools: every schema shape the generator renders, and hostile text. */
export const representativeTools: readonly SdkToolInput[] = [
  {
    name: 'read_file',
    title: 'Read file',
    description: 'Read a text file.',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'The path.', default: '.', examples: ['src/a.ts', 'README.md'] },
        offset: { type: 'integer', description: 'First line to read.', default: 1 },
        encoding: { type: 'string', enum: ['utf8', 'latin1'] },
      },
      required: ['path'],
      additionalProperties: false,
    },
    output: {
      type: 'object',
      properties: {
        content: { type: 'string' },
        lines: { type: 'integer' },
        truncated: { type: 'boolean' },
      },
      required: ['content', 'lines'],
      additionalProperties: false,
    },
  },
  {
    name: 'my-tool',
    description: '*/ declare const x: 1; /*',
    parameters: {
      type: 'object',
      properties: {
        mode: {
          description: 'How to search. */ declare const y: 2; /*',
          oneOf: [
            { type: 'object', properties: { kind: { const: 'exact' } }, required: ['kind'], additionalProperties: false },
            {
              type: 'object',
              properties: { kind: { const: 'fuzzy' }, distance: { type: 'integer', description: 'Edits allowed.' } },
              required: ['kind'],
              additionalProperties: false,
            },
          ],
        },
        values: { type: 'array', items: { oneOf: [{ type: 'string' }, { type: 'number' }, { type: 'null' }] } },
        flag: { const: true },
        level: { enum: [1, 2, 3] },
      },
    },
  },
  {
    name: 'my_tool',
    description: 'Line one.\nLine two with a */ inside.',
    parameters: {
      type: 'object',
      description: 'Nothing to pass.',
      properties: {},
      additionalProperties: false,
    },
  },
  {
    name: 'delete',
    description: 'Delete things.',
    parameters: {
      type: 'object',
      properties: {
        'dry-run': { type: 'boolean', description: 'Only report.' },
        'say "hi"\\': { type: 'string' },
        'new\nline': { type: 'string', description: 'A key\nwith a newline.' },
        default: { type: 'number' },
        meta: { type: 'object', properties: { tags: { type: 'array', items: { type: 'string' } } }, required: ['tags'] },
        any: {},
      },
      required: ['dry-run'],
    },
    output: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } },
  },
]
