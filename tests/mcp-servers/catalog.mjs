// A test MCP server of our own (stdio) that serves the synthetic tool definitions of
// catalog.json (modelled on popular MCP servers), for the tool-selection tests: with the
// reference filesystem and everything servers they make a catalog of over 60 tools. A
// call answers with the tool's name and its arguments. Tools are listed in pages.
import { readFileSync } from 'node:fs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

const { tools } = JSON.parse(
  readFileSync(new URL('./catalog.json', import.meta.url), 'utf8'),
);

const server = new Server(
  { name: 'catalog', version: '1.0.0' },
  { capabilities: { tools: {} } },
);

// Listed in pages of 10 (`nextCursor`), so a client must follow the cursor to see them all.
const PAGE = 10;
server.setRequestHandler(ListToolsRequestSchema, async (req) => {
  const start = Number(req.params?.cursor ?? 0) || 0;
  const next = start + PAGE;
  return {
    tools: tools.slice(start, next),
    ...(next < tools.length ? { nextCursor: String(next) } : {}),
  };
});

server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const tool = tools.find((t) => t.name === req.params.name);
  if (!tool) {
    return { isError: true, content: [{ type: 'text', text: `no tool ${req.params.name}` }] };
  }
  return {
    content: [
      { type: 'text', text: `${tool.name} done with ${JSON.stringify(req.params.arguments ?? {})}` },
    ],
  };
});

await server.connect(new StdioServerTransport());
