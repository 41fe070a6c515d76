import { describe, expect, it } from 'vitest';
import { directCallRefusal } from './islet-mcp-server.ts';
import { mcpSettingsSchema, resolveTools } from './mcp-settings.ts';
import { toolDefinitions } from './tool-definitions.ts';
import { jsonSchemaOf, SURFACE_DEFINITIONS } from './tool-schemas.ts';

describe('MCP settings', () => {
  it("defaults to the four surfaces under the documents' names", () => {
    expect(resolveTools({ tools: {} }).map((t) => [t.surface, t.name])).toEqual([
      ['run_code', 'run_code'],
      ['code_api', 'openbot_code_api'],
      ['code_run', 'openbot_run_code'],
      ['skill', 'run_code_skill'],
    ]);
  });

  it('renames, re-describes and disables per surface; refuses clashes, bad names and unknown keys', () => {
    const ok = mcpSettingsSchema.parse({
      tools: { run_code: { name: 'exec', description: 'Runs.' }, skill: { enabled: false } },
    });
    expect(resolveTools(ok).map((t) => t.name)).toEqual(['exec', 'openbot_code_api', 'openbot_run_code']);
    expect(resolveTools(ok)[0]!.description).toBe('Runs.');
    for (const bad of [
      { tools: { code_api: { name: 'run_code' } } },
      { tools: { run_code: { name: 'has space' } } },
      { tools: { run_code: { name: '' } } },
      { tools: { run_code: { name: 'x'.repeat(65) } } },
      { tools: { shell: {} } },
      { tools: { run_code: { enabled: 'no' } } },
      { extra: true },
    ])
      expect(mcpSettingsSchema.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    // A clash with a disabled tool is no clash.
    expect(
      mcpSettingsSchema.safeParse({
        tools: { skill: { enabled: false }, code_api: { name: 'run_code_skill' } },
      }).success,
    ).toBe(true);
  });

  it('the code-call refusal names the tool that does run programs and the code-API tool when offered', () => {
    const onlyCodeMode = resolveTools(mcpSettingsSchema.parse({ tools: { run_code: { enabled: false } } }));
    expect(directCallRefusal('crm__find', onlyCodeMode, 'crm.find')).toBe(
      'tool "crm__find" cannot be called directly: in code-call mode only openbot_run_code is called directly. ' +
        'Reach that tool from inside a program instead: call openbot_run_code with code that calls it, as in `await apps.crm.find(args)`; openbot_code_api shows the bindings and their arguments.',
    );
    const skillOnly = resolveTools(
      mcpSettingsSchema.parse({
        tools: { run_code: { enabled: false }, code_run: { enabled: false }, code_api: { enabled: false } },
      }),
    );
    expect(directCallRefusal('x', skillOnly)).toBe('tool "x" is not offered here');
  });

  it('tool definitions in every format carry the same generated schema', () => {
    const tools = resolveTools({ tools: {} });
    const schema = jsonSchemaOf(SURFACE_DEFINITIONS.skill.input, 'input');
    const mcp = toolDefinitions(tools, 'mcp').tools[3] as { inputSchema: unknown; outputSchema: unknown };
    const openai = toolDefinitions(tools, 'openai').tools[3] as { function: { parameters: unknown } };
    const anthropic = toolDefinitions(tools, 'anthropic').tools[3] as { input_schema: unknown };
    expect(mcp.inputSchema).toEqual(schema);
    expect(openai.function.parameters).toEqual(schema);
    expect(anthropic.input_schema).toEqual(schema);
    expect(mcp.outputSchema).toEqual(jsonSchemaOf(SURFACE_DEFINITIONS.skill.output!, 'output'));
    expect(schema).toMatchObject({ type: 'object', required: ['language', 'code'] });
    expect(schema).not.toHaveProperty('$schema');
  });
});
