/**
 * MCP in and out (`toolbox-codemode/mcp`): import a connected MCP server's tools as ordinary tool
 * definitions, and serve one agent's view of the tools as an MCP server, natively or as Code Mode.
 * Listed one by one. Only this subpath (and the CLI) loads the MCP SDK; the core never does.
 */

export { defaultPrefix, importMcpTools, McpImportError } from './import-tools.ts'
export type { ImportMcpToolsOptions, McpImportedTool, McpImportReport, McpRefusedTool, McpToolImport } from './import-tools.ts'
export { createMcpServer, serveMcp } from './serve.ts'
export type { McpServeTransport, McpServerOptions, McpServing, ServeMcpOptions } from './serve.ts'
export { CONTENT_VALUE_SCHEMA, fromMcpContent, toMcpContent } from './content.ts'
