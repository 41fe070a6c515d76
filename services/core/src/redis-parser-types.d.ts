/** The part of redis-parser 3 (ioredis's reply parser) that redis-text-replies.ts uses. */
declare module 'redis-parser' {
  interface RedisParserOptions {
    stringNumbers?: boolean;
    returnBuffers?: boolean;
    returnError: (err: Error) => void;
    returnFatalError?: (err: Error) => void;
    returnReply: (reply: unknown) => void;
  }
  class RedisParser {
    constructor(options: RedisParserOptions);
    /** Read before each bulk or simple reply is made: true, a Buffer; false, a UTF-8 string. */
    optionReturnBuffers: boolean;
    execute(data: Buffer): void;
  }
  export default RedisParser;
}
